// Maintenance of a 3-member TLS cluster of real etcd: by hand (`etcdadm defrag`, `etcdadm alarm
// recover`; the lifecycle fixture's hosts) and by the controllers (`etcdadm auto`; hosts as
// processes on 127.0.0.11-13 sharing a local store). A fragmented db is keys written, deleted and
// compacted away; NOSPACE is a 32 MiB quota filled by one key rewritten over and over. Oracles:
// etcdctl endpoint status (db sizes, the leader), endpoint hashkv and alarm list; the store's
// backups, events and maintenance record. A corrupt member is a value's bytes overwritten in its
// db file while it is stopped.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "controller/records.h"
#include "etcd/client.h"
#include "etcd/etcd_version.h"
#include "etcdadm/member_config.h"
#include "test/support/auto_fixture.h"
#include "test/support/lifecycle_fixture.h"
#include "test/support/writer.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

class Maintenance : public LifecycleFixture {
 protected:
  struct MemberStatus {
    std::string name;
    int64_t db_size = 0;
    int64_t in_use = 0;
    bool leader = false;
  };
  // etcdctl endpoint status --cluster: member ID (hex) -> what it says.
  std::map<std::string, MemberStatus> statuses() {
    std::map<std::string, MemberStatus> out;
    std::map<uint64_t, std::string> names;
    for (const auto& m : member_list(hosts_[0])) names[m["ID"].get<uint64_t>()] = m["name"];
    for (const auto& e : etcdctl_json(hosts_[0], {"endpoint", "status", "--cluster"})) {
      const auto& st = e["Status"];
      uint64_t id = st["header"]["member_id"];
      MemberStatus s;
      s.name = names[id];
      s.db_size = st["dbSize"];
      s.in_use = st.value("dbSizeInUse", int64_t{0});
      s.leader = st["leader"].get<uint64_t>() == id;
      out[s.name] = s;
    }
    return out;
  }

  std::set<uint64_t> cluster_hashes() {
    std::set<uint64_t> hashes;
    for (const auto& e : etcdctl_json(hosts_[0], {"endpoint", "hashkv", "--cluster"})) hashes.insert(e["HashKV"]["hash"].get<uint64_t>());
    return hashes;
  }
};

// By hand, on one cluster with a 32 MiB quota: `etcdadm defrag --cluster` takes a backup, then goes
// followers first, the leader last after its leadership moved; every member's file shrinks to what
// it holds, the data stays equal, writes go on; asked again with a threshold, nothing is due. Then
// NOSPACE: with the default margin nothing can be compacted, so `alarm recover` names the quota to
// raise and leaves the alarm armed; with a margin of 3 it backs up, compacts, defragments and
// disarms, and the backup holds the data. With a member down, nothing is defragmented at all.
TEST_F(Maintenance, DefragAndNospaceByHandFollowersFirstLeaderLastUnderWritesAndRefusedWithAMemberDown) {

  const int64_t quota = 32 << 20;
  ASSERT_NO_FATAL_FAILURE(three_member_cluster({"--quota-backend-bytes", std::to_string(quota)}));
  ASSERT_NO_FATAL_FAILURE(fragment(16));
  auto before = statuses();
  std::string leader_before;
  for (const auto& [name, s] : before) {
    EXPECT_GT(s.db_size - s.in_use, 8 << 20) << name << " is fragmented";
    if (s.leader) leader_before = name;
  }
  ASSERT_FALSE(leader_before.empty());
  const std::string store = dir_ / "store";
  const std::vector<std::string> where = {"--config-dir", hosts_[0].conf(), "-o", "json"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), where.begin(), where.end());
    return args;
  };

  // The plan: every member due, the leader last.
  auto dry = etcdadm(with({"defrag", "--cluster", "--dry-run", "--min-free-percent", "50"}));
  ASSERT_EQ(dry.exit_code, 0) << dry.output;
  auto plan = json_of(dry);
  ASSERT_EQ(plan["members"].size(), 3u) << dry.output;
  for (const auto& m : plan["members"]) EXPECT_TRUE(m["due"].get<bool>()) << dry.output;
  EXPECT_EQ(plan["members"][2]["name"], leader_before) << dry.output;
  EXPECT_EQ(plan["members"][2]["role"], "leader") << dry.output;

  // Without a store or --skip-backup: refused before anything.
  auto no_store = etcdadm(with({"defrag", "--cluster"}));
  EXPECT_NE(no_store.exit_code, 0);
  EXPECT_NE(no_store.output.find("--skip-backup"), std::string::npos) << no_store.output;

  Writer writer(connection({&hosts_[0], &hosts_[1], &hosts_[2]}));
  auto r = etcdadm(with({"defrag", "--cluster", "--store", store}));
  writer.stop();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto result = json_of(r);
  ASSERT_EQ(result["members"].size(), 3u) << r.output;
  EXPECT_FALSE(result["backup"].get<std::string>().empty()) << r.output;
  const auto& last = result["members"][2];
  EXPECT_EQ(last["name"], leader_before) << "the leader goes last: " << r.output;
  EXPECT_TRUE(last["led"].get<bool>()) << r.output;
  EXPECT_FALSE(last["leadershipMovedTo"].get<std::string>().empty()) << r.output;
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(result["members"][i]["led"].get<bool>()) << r.output;
  for (const auto& m : result["members"]) {
    std::printf("defrag of %s: %lld -> %lld bytes, stalled %lld ms, caught up %lld ms later\n",
                m["name"].get<std::string>().c_str(), static_cast<long long>(m["dbSizeBefore"].get<int64_t>()),
                static_cast<long long>(m["dbSizeAfter"].get<int64_t>()), static_cast<long long>(m["stalledMs"].get<int64_t>()),
                static_cast<long long>(m["caughtUpMs"].get<int64_t>()));
  }
  std::printf("longest write gap during the defrag: %lld ms (%lld writes)\n",
              static_cast<long long>(writer.longest_outage().count()), static_cast<long long>(writer.writes()));
  EXPECT_LT(writer.longest_outage(), 3s) << "no write waits longer than an election: " << writer.last_error();
  EXPECT_GT(writer.writes(), 0);

  // etcdctl's view: every file shrank to about what it holds, the data is the same everywhere.
  auto after = statuses();
  for (const auto& [name, s] : after) {
    EXPECT_LT(s.db_size, before[name].db_size / 2) << name;
    EXPECT_LT(s.db_size - s.in_use, 4 << 20) << name;
  }
  EXPECT_EQ(cluster_hashes().size(), 1u) << "every member holds the same data";
  auto listed = etcdadm({"backup", "list", "--store", store, "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find(result["backup"].get<std::string>()), std::string::npos) << listed.output;

  // A threshold nothing meets: no member is touched.
  auto again = etcdadm(with({"defrag", "--cluster", "--skip-backup", "--min-free-percent", "50", "--min-free-mib", "8"}));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  auto none = json_of(again);
  EXPECT_TRUE(none["members"].empty()) << again.output;
  EXPECT_EQ(none["skipped"].size(), 3u) << again.output;



  EtcdClient client(connection({&hosts_[0], &hosts_[1], &hosts_[2]}));
  for (int i = 0; i < 20; ++i) client.put("/registry/pods/p" + std::to_string(i), "live");
  const int history = fill_until_nospace(client, [](int) { return std::string("/hot"); });
  ASSERT_GT(history, 5);
  auto alarm_listed = etcdadm({"alarm", "list", "--config-dir", hosts_[0].conf(), "-o", "json"});
  ASSERT_EQ(alarm_listed.exit_code, 0) << alarm_listed.output;
  EXPECT_NE(alarm_listed.output.find("NOSPACE"), std::string::npos) << alarm_listed.output;

  // Everything within the margin (and a disarm only under 75% of the quota: how much a defrag alone
  // gains of a 32 MiB file varies, 2-4 MiB): reported with the flag to raise, the alarm left armed.
  auto nospace_refused = etcdadm({"alarm", "recover", "--config-dir", hosts_[0].conf(), "--skip-backup", "--disarm-below-percent", "75"});
  EXPECT_NE(nospace_refused.exit_code, 0) << nospace_refused.output;
  EXPECT_NE(nospace_refused.output.find("--quota-backend-bytes"), std::string::npos) << nospace_refused.output;
  EXPECT_NE(nospace_refused.output.find("stays armed"), std::string::npos) << nospace_refused.output;
  EXPECT_NE(etcdctl(hosts_[0], {"alarm", "list"}).output.find("NOSPACE"), std::string::npos) << "left armed";
  EXPECT_THROW(client.put("/refused", "x"), Error) << "writes are still refused";

  auto recovered = etcdadm({"alarm", "recover", "--config-dir", hosts_[0].conf(), "--store", store, "--keep-revisions", "3",
                    "-o", "json"});
  ASSERT_EQ(recovered.exit_code, 0) << recovered.output;
  auto j = json_of(recovered);
  EXPECT_TRUE(j["disarmed"].get<bool>()) << recovered.output;
  EXPECT_EQ(j["compactedTo"].get<int64_t>(), j["revision"].get<int64_t>() - 3) << recovered.output;
  EXPECT_EQ(j["defragmented"].size(), 3u) << recovered.output;
  EXPECT_LT(j["largestDbAfter"].get<int64_t>(), quota * 9 / 10) << recovered.output;
  EXPECT_EQ(j["quota"].get<int64_t>(), quota) << recovered.output;
  EXPECT_NO_THROW(client.put("/after", "writes go on"));
  auto alarms = etcdctl(hosts_[0], {"alarm", "list"});
  EXPECT_EQ(alarms.output.find("NOSPACE"), std::string::npos) << "etcdctl lists no alarm: " << alarms.output;

  // The backup taken first: at the alarm's revision, every key there.
  const std::string backup = j["backup"];
  auto backups = etcdadm({"backup", "list", "--store", store, "-o", "json"});
  ASSERT_EQ(backups.exit_code, 0) << backups.output;
  auto list = nlohmann::json::parse(backups.output.substr(backups.output.find('[')));
  ASSERT_EQ(list.size(), 2u) << "the defrag's and the recovery's: " << backups.output;
  EXPECT_EQ(list[0]["backup"], backup) << "newest first";
  EXPECT_EQ(list[0]["revision"].get<int64_t>(), j["revision"].get<int64_t>()) << backups.output;
  auto got = etcdadm({"backup", "get", backup, "/registry/pods/", "--prefix", "--store", store, "-o", "json"});
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_EQ(json_of(got)["count"].get<int64_t>(), 20) << got.output;

  // A member that joins now catches up by replaying the leader's log, the history that filled the
  // quota included: its db file grows to that peak, and etcd's quota check (the file's size) would
  // raise NOSPACE again on the next write (seen on 3.5: the whole cluster refused writes because a
  // member joined). join lets the learner catch up under twice the quota, defragments it stopped,
  // and promotes it on the quota itself. Killed right after the learner stopped, join is run again
  // and goes on.
  ASSERT_NO_FATAL_FAILURE(add_host());
  const Host& joiner = hosts_.back();
  std::vector<std::string> join_args = {"join", hosts_[0].client_url(), "--quota-backend-bytes", std::to_string(quota)};
  for (const auto& f : member_flags(joiner)) join_args.push_back(f);
  RunOptions kill_at;
  kill_at.env["ETCDADM_FAILPOINTS"] = "join/catch-up-quota/stopped";
  auto killed = etcdadm(join_args, kill_at);
  ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.output;
  EXPECT_NE(killed.output.find("the learner catches up under twice the quota (" + std::to_string(2 * quota)),
            std::string::npos)
      << killed.output;
  auto joined = etcdadm(join_args);
  ASSERT_EQ(joined.exit_code, 0) << joined.output;
  // 3.4 and 3.5 keep 100000 entries before a snapshot, so the learner replays the whole history;
  // from 3.6 (10000) the leader may send it a snapshot instead, and then there is nothing to shrink.
  const bool replayed = joined.output.find("defragmenting it, stopped, before its promotion") != std::string::npos;
  std::cout << "etcd " << etcd_under_test().version << ": the joining learner "
            << (replayed ? "replayed the history that filled the quota, defragmented stopped" : "did not need a defrag")
            << "\n";
  if (*EtcdVersion::parse(etcd_under_test().version) < EtcdVersion{3, 6, 0}) {
    EXPECT_TRUE(replayed) << joined.output;
  }
  EXPECT_NE(joined.output.find("runs on the quota itself (" + std::to_string(quota) + " bytes)"), std::string::npos)
      << joined.output;
  EXPECT_NE(read_file(joiner.conf() + "/etcd.env").find("ETCD_QUOTA_BACKEND_BYTES=" + std::to_string(quota) + "\n"),
            std::string::npos);
  for (int i = 0; i < 20; ++i) EXPECT_NO_THROW(client.put("/after-join/" + std::to_string(i), "writes go on"));
  alarms = etcdctl(hosts_[0], {"alarm", "list"});
  EXPECT_EQ(alarms.output.find("NOSPACE"), std::string::npos) << "no alarm after the join: " << alarms.output;
  for (const auto& m : member_list(hosts_[0])) EXPECT_FALSE(m.value("isLearner", false)) << m.dump();
  auto joiner_status = etcdctl_answer(etcdctl(joiner, {"endpoint", "status", "-w", "json"}).output)["Status"];
  EXPECT_LT(joiner_status["dbSize"].get<int64_t>(), quota * 9 / 10) << joiner_status.dump();
  EXPECT_EQ(cluster_hashes().size(), 1u) << "the joined member holds the same data";

  // A member down: refused, naming it, nothing done.
  stop_pid_file(hosts_[2].conf() + "/etcd.pid", bin_of(hosts_[2]) + "/etcd", 3000ms);
  auto refused = etcdadm(with({"defrag", "--cluster", "--skip-backup"}));
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("m3"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("does not answer"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("every member must be healthy"), std::string::npos) << refused.output;
}

class AutoMaintenance : public AutoFixture {
 protected:
  // Member name -> {db size, size in use}, and the leader's name, as etcdctl sees them.
  std::map<std::string, std::pair<int64_t, int64_t>> sizes(std::string* leader = nullptr) {
    std::map<uint64_t, std::string> names;
    for (const auto& m : member_list(hosts_[0])) names[m["ID"].get<uint64_t>()] = m["name"];
    std::map<std::string, std::pair<int64_t, int64_t>> out;
    for (const auto& e : etcdctl_json(hosts_[0], {"endpoint", "status", "--cluster"})) {
      const auto& st = e["Status"];
      const uint64_t id = st["header"]["member_id"];
      out[names[id]] = {st["dbSize"].get<int64_t>(), st.value("dbSizeInUse", int64_t{0})};
      if (leader != nullptr && st["leader"].get<uint64_t>() == id) *leader = names[id];
    }
    return out;
  }
};

// By the controllers, on one cluster with a 32 MiB quota. Fragmentation past the spec's threshold:
// the acting controller defragments the followers, then its own member after moving leadership
// away, a backup first, while a client writes; killed right after its first member, it finishes
// with the others when it comes back. Then a schedule defragments every member again, and the
// record in the store shows when each was done. Then NOSPACE: with the default margin nothing can
// be compacted, so the acting controller reports the quota to raise, once, and leaves the alarm
// armed; with the spec's margin lowered it recovers on its own and writes go on.
TEST_F(AutoMaintenance, DefragmentedFollowersFirstLeaderLastOnTheScheduleAndNospaceRecoveredOrReportedOnce) {

  const int64_t quota = 32 << 20;
  member_extra_ = {"--quota-backend-bytes", std::to_string(quota)};
  ASSERT_NO_FATAL_FAILURE(bootstrap_three({"--defrag-free-percent", "0", "--nospace-disarm-below-percent", "75"}));
  ASSERT_NO_FATAL_FAILURE(fragment(16));
  std::string leader;
  const auto before = sizes(&leader);
  ASSERT_FALSE(leader.empty());
  const Host& acting = *std::find_if(hosts_.begin(), hosts_.end(), [&](const Host& h) { return h.name == leader; });
  EXPECT_TRUE(done("defrag").empty()) << "with the threshold off, nothing is defragmented";

  // The acting controller dies right after its first member (a follower's) is done.
  autos_[acting.name].stop(5000ms);
  start_auto(acting, {{"ETCDADM_FAILPOINTS", "auto/defrag/member-done=kill"}});
  Writer writer(connection({&hosts_[0], &hosts_[1], &hosts_[2]}));
  seed(3, {"--defrag-free-percent", "50", "--defrag-min-free-mib", "8"});
  ASSERT_TRUE(eventually(60s, [&] { return !autos_[acting.name].running(); }, "the acting controller killed at its failpoint"));
  EXPECT_EQ(autos_[acting.name].wait(), 128 + SIGKILL) << logs();
  ASSERT_EQ(done("defrag").size(), 1u) << logs();
  start_auto(acting);
  ASSERT_TRUE(eventually(90s, [&] { return done("defrag").size() >= 3; }, "every member defragmented"));
  std::this_thread::sleep_for(2s);  // nothing more is due: no fourth defrag follows
  writer.stop();

  const auto defrags = done("defrag");
  ASSERT_EQ(defrags.size(), 3u) << logs();
  std::set<std::string> members;
  for (size_t i = 0; i < defrags.size(); ++i) {
    const std::string& outcome = defrags[i].outcome;
    std::printf("%s\n", outcome.c_str());
    members.insert(outcome.substr(0, outcome.find(" (")));
    EXPECT_EQ(outcome.find("leadership moved") != std::string::npos, i == 2) << "only the last led: " << outcome;
  }
  EXPECT_EQ(members.size(), 3u) << "each member once";
  EXPECT_NE(defrags[2].outcome.find("member " + leader + " "), std::string::npos) << "the leader last: " << defrags[2].outcome;
  bool backed_up = false;
  for (const auto& e : done("backup")) backed_up = backed_up || e.reason.rfind("before defrag", 0) == 0;
  EXPECT_TRUE(backed_up) << "a backup before the defrag";
  std::printf("longest write gap: %lld ms (%lld writes)\n", static_cast<long long>(writer.longest_outage().count()),
              static_cast<long long>(writer.writes()));
  EXPECT_LT(writer.longest_outage(), 3s) << writer.last_error() << "\n" << logs();
  for (const auto& [name, s] : sizes()) {
    EXPECT_LT(s.first, before.at(name).first / 2) << name << " shrank";
  }
  auto hashes = hash_kv({&hosts_[0], &hosts_[1], &hosts_[2]});
  EXPECT_EQ(std::set<uint64_t>({hashes["m1"], hashes["m2"], hashes["m3"]}).size(), 1u);

  // On a schedule, every member again (the threshold off: nothing is fragmented now).
  seed(3, {"--defrag-free-percent", "0", "--defrag-schedule", "@every 3s"});
  ASSERT_TRUE(eventually(90s, [&] { return done("defrag").size() >= 6; }, "every member defragmented on the schedule"));
  seed(3, {"--defrag-schedule", ""});
  auto status = auto_status();
  ASSERT_EQ(status["defrag"]["members"].size(), 3u) << status.dump(2);
  for (const auto& m : status["defrag"]["members"]) EXPECT_LT(m["dbSizeAfter"].get<int64_t>(), 4 << 20) << status.dump(2);
  std::this_thread::sleep_for(4s);  // the schedule's last run finished: no defrag under way


  // NOSPACE (the spec disarms only under 75% of the quota: how much a defrag alone gains of a
  // 32 MiB file varies, 2-4 MiB).
  EtcdClient client(connection({&hosts_[0], &hosts_[1], &hosts_[2]}));
  for (int i = 0; i < 20; ++i) client.put("/registry/pods/p" + std::to_string(i), "live");
  ASSERT_GT(fill_until_nospace(client, [](int) { return std::string("/hot"); }), 5);

  auto recoveries = [&] {
    std::vector<AutoEvent> out;
    for (const auto& e : events()) {
      if (e.action == "recover-space") out.push_back(e);
    }
    return out;
  };
  ASSERT_TRUE(eventually(60s, [&] { return !recoveries().empty(); }, "the acting controller's recovery"));
  std::this_thread::sleep_for(6s);  // several rounds: the failed recovery is not tried again
  auto tried = recoveries();
  ASSERT_EQ(tried.size(), 1u) << logs();
  const size_t defrags_at_alarm = done("defrag").size();
  EXPECT_EQ(tried[0].outcome.rfind("failed:", 0), 0u) << tried[0].outcome;
  EXPECT_NE(tried[0].outcome.find("--quota-backend-bytes"), std::string::npos) << tried[0].outcome;
  EXPECT_NE(tried[0].outcome.find("stays armed"), std::string::npos) << tried[0].outcome;
  EXPECT_THROW(client.put("/refused", "x"), Error) << "the alarm is left armed";

  const size_t defrags_before = done("defrag").size();
  EXPECT_EQ(defrags_before, defrags_at_alarm) << "nothing more while held";
  seed(3, {"--nospace-keep-revisions", "3"});
  ASSERT_TRUE(eventually(60s, [&] { return done("recover-space").size() == 1; }, "the recovery with the lower margin"));
  EXPECT_NE(done("recover-space")[0].outcome.find("NOSPACE disarmed"), std::string::npos) << done("recover-space")[0].outcome;
  EXPECT_NO_THROW(client.put("/after", "writes go on"));
  EXPECT_EQ(done("defrag").size(), defrags_before + 3) << "each member defragmented once by the recovery";
  // The backup before it: the defrag's, minutes old, is reused (a pre-change backup younger than
  // 10 minutes serves every change, as for membership changes).
  EXPECT_FALSE(done("backup").empty()) << "a backup before the recovery";
  status = auto_status();
  EXPECT_TRUE(status["lastSpaceRecovery"]["disarmed"].get<bool>()) << status.dump(2);
  EXPECT_LT(status["lastSpaceRecovery"]["largestDbAfter"].get<int64_t>(), quota * 9 / 10) << status.dump(2);
  hashes = hash_kv({&hosts_[0], &hosts_[1], &hosts_[2]});
  EXPECT_EQ(std::set<uint64_t>({hashes["m1"], hashes["m2"], hashes["m3"]}).size(), 1u);
}

// A member whose db was damaged on disk while it was stopped: a value's bytes overwritten in place
// (bbolt keeps no checksum of its pages, so etcd starts on it and serves the damaged value, and
// only a comparison with the other members shows it). `etcdadm hashkv` names it and changes
// nothing; the acting controller, once the spec's check is on, finds it by the voters' HashKV,
// records it and removes it (quorum kept), its host sets its data aside and joins again as a new
// member from the healthy ones: every member then serves the value as written, the two healthy
// members keep their IDs, and the damaged data dir is still there for a person.
TEST_F(AutoMaintenance, ACorruptMemberIsFoundReplacedFromTheHealthyOnesAndItsDataKeptAside) {
  ASSERT_NO_FATAL_FAILURE(bootstrap_three({"--corrupt-check-interval", "0"}));
  const std::string key = "/registry/secrets/default/canary";
  const std::string written(3000, 'C'), damaged(3000, 'D');
  ASSERT_EQ(etcdctl(hosts_[0], {"put", key, written}).exit_code, 0);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(etcdctl(hosts_[0], {"put", "/registry/pods/p" + std::to_string(i), "v"}).exit_code, 0);
  std::string leader;
  sizes(&leader);
  const Host& victim = *std::find_if(hosts_.begin(), hosts_.end(), [&](const Host& h) { return h.name != leader; });
  const Host& witness = *std::find_if(hosts_.begin(), hosts_.end(), [&](const Host& h) { return h.name == leader; });
  auto ids = [&] {  // asked of a healthy member (the victim is a learner for a while)
    std::map<std::string, uint64_t> out;
    for (const auto& m : member_list(witness)) {
      if (!m.value("name", std::string()).empty()) out[m["name"].get<std::string>()] = m["ID"].get<uint64_t>();
    }
    return out;
  };
  const auto ids_before = ids();
  auto serves = [&](const Host& h) {
    auto r = etcdctl(h, {"get", key, "--consistency=s", "--print-value-only"});
    return r.exit_code == 0 ? r.output.substr(0, r.output.find('\n')) : std::string();
  };
  for (const auto& h : hosts_) ASSERT_TRUE(eventually(10s, [&] { return serves(h) == written; }, h.name + " serving the value"));

  // Paused (nothing restarts it), its etcd stopped, every copy of the value in its db overwritten.
  auto damage = [&] {
    ASSERT_EQ(with_store({"auto", "pause", "--reason", "damaging a disk"}).exit_code, 0);
    std::this_thread::sleep_for(2s);  // the round under way finishes
    stop_pid_file(victim.conf() + "/etcd.pid", bin_of(victim) + "/etcd", 5000ms);
    ASSERT_GE(overwrite_in_place(victim.data() + "/member/snap/db", written, damaged), 1) << "the value is in the db file";
  };
  ASSERT_NO_FATAL_FAILURE(damage());
  // Without etcd's own initial check (a member configured before etcdadm turned it on), the damaged
  // member starts and serves the damaged value: only a comparison of HashKV finds it.
  EnvVars env;
  for (auto [name, value] : parse_env_file(read_file(victim.conf() + "/etcd.env"))) {
    if (name == "ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK") continue;
    if (name == "ETCD_FEATURE_GATES") value = "CompactHashCheck=true";
    env.emplace_back(name, value);
  }
  write_file_atomic(victim.conf() + "/etcd.env", render_env_file(env), 0600, /*overwrite=*/true);
  ASSERT_EQ(with_store({"auto", "resume"}).exit_code, 0);
  ASSERT_TRUE(eventually(30s, [&] { return serves(victim) == damaged; }, victim.name + " started again, serving the damaged value"));
  for (const auto& h : hosts_) {
    if (&h != &victim) {
      EXPECT_EQ(serves(h), written) << h.name;
    }
  }

  // By hand: named, exit 5, nothing changed.
  auto by_hand = etcdadm({"hashkv", "--config-dir", witness.conf(), "-o", "json"});
  EXPECT_EQ(by_hand.exit_code, 5) << by_hand.output;
  // The JSON on stdout, the error after it.
  const size_t from = by_hand.output.find('{'), to = by_hand.output.find("\n}\n");
  ASSERT_NE(to, std::string::npos) << by_hand.output;
  auto verdict = nlohmann::json::parse(by_hand.output.substr(from, to + 2 - from));
  EXPECT_NE(by_hand.output.find("corrupt member: "), std::string::npos) << by_hand.output;
  EXPECT_EQ(verdict["verdict"], "minority-differs") << verdict.dump(2);
  for (const auto& m : verdict["members"]) {
    EXPECT_EQ(m["differs"].get<bool>(), m["member"].get<std::string>().rfind(victim.name + " ", 0) == 0) << verdict.dump(2);
  }
  EXPECT_EQ(ids(), ids_before);

  // Removed as corrupt (its removal's reason saying how it was found: `how`), then back as a member
  // with a new ID, every member serving the value as written.
  auto replaced = [&](const std::string& how, const std::map<std::string, uint64_t>& before) {
    auto removed = [&] {
      for (const auto& e : done("remove-member")) {
        if (e.reason.rfind("member " + victim.name + " (", 0) == 0 && e.reason.find("is corrupt") != std::string::npos &&
            e.reason.find(how) != std::string::npos) {
          return true;
        }
      }
      return false;
    };
    ASSERT_TRUE(eventually(60s, removed, "the corrupt member removed (" + how + ")")) << logs();
    ASSERT_TRUE(eventually(90s, [&] {
      auto now = ids();
      return one_healthy_cluster(3) && now.count(victim.name) && now.at(victim.name) != before.at(victim.name);
    }, victim.name + " back as a new member")) << logs();
    for (const auto& h : hosts_) EXPECT_TRUE(eventually(10s, [&] { return serves(h) == written; }, h.name + " serving the value as written"));
  };

  // The controllers, with the check on: found, removed, its data set aside, replaced.
  seed(3, {"--corrupt-check-interval", "2s"});
  ASSERT_NO_FATAL_FAILURE(replaced("voters agree on HashKV", ids_before));
  const auto ids_after = ids();
  for (const auto& [name, id] : ids_before) {
    if (name != victim.name) {
      EXPECT_EQ(ids_after.at(name), id) << name << ": the healthy members stay";
    }
  }
  bool forgot_keeping_data = false;
  for (const auto& e : done("forget-member")) {
    forgot_keeping_data = forgot_keeping_data || (e.host == victim.name && e.reason.find("found corrupt") != std::string::npos);
  }
  EXPECT_TRUE(forgot_keeping_data) << logs();
  std::string aside;
  const auto data_dir = std::filesystem::path(victim.data());
  for (const auto& e : std::filesystem::directory_iterator(data_dir.parent_path())) {
    if (e.path().filename().string().rfind(data_dir.filename().string() + ".set-aside-corrupt-", 0) == 0) aside = e.path();
  }
  ASSERT_FALSE(aside.empty()) << "the corrupt member's data kept aside";
  EXPECT_NE(read_file(aside + "/member/snap/db").find(damaged), std::string::npos) << "as it was found";
  auto status = auto_status();
  ASSERT_EQ(status["corrupt"].size(), 1u) << status.dump(2);
  EXPECT_EQ(status["corrupt"][0]["memberID"], fmt::format("{:x}", ids_before.at(victim.name))) << status.dump(2);
  auto agreed = etcdadm({"hashkv", "--config-dir", witness.conf()});
  EXPECT_EQ(agreed.exit_code, 0) << agreed.output;

  // The new member's env file has etcd's initial check (member_env; 3.5+, 3.4's cannot reach its
  // peers under TLS): damaged the same way, it refuses to start rather than serve the damaged
  // value, and the others serve it as written. Its host says so; the others agreeing, it is
  // replaced as corrupt at once (no grace), its data aside.
  if (corruption_check_env(etcd_under_test().version).empty()) {
    std::cout << "etcd " << etcd_under_test().version << ": no initial corruption check under TLS; the HashKV comparison above is the check\n";
    return;
  }
  const auto ids_second = ids();
  for (const auto& [name, value] : corruption_check_env(etcd_under_test().version)) {
    EXPECT_EQ(env_value(parse_env_file(read_file(victim.conf() + "/etcd.env")), name), value) << name;
  }
  const size_t log_before = read_file(victim.conf() + "/etcd.log").size();
  ASSERT_NO_FATAL_FAILURE(damage());
  ASSERT_EQ(with_store({"auto", "resume"}).exit_code, 0);
  EXPECT_TRUE(eventually(60s, [&] {
    return read_file(victim.conf() + "/etcd.log").find("found data inconsistency with peers", log_before) != std::string::npos;
  }, victim.name + " refusing to start on its damaged data")) << read_file(victim.conf() + "/etcd.log").substr(log_before);
  EXPECT_EQ(serves(victim), "");
  for (const auto& h : hosts_) {
    if (&h != &victim) {
      EXPECT_EQ(serves(h), written) << h.name;
    }
  }
  ASSERT_NO_FATAL_FAILURE(replaced("etcd refused to start member " + victim.name + " (", ids_second));
  int asides = 0;
  for (const auto& e : std::filesystem::directory_iterator(data_dir.parent_path())) {
    asides += e.path().filename().string().rfind(data_dir.filename().string() + ".set-aside-corrupt-", 0) == 0;
  }
  EXPECT_EQ(asides, 2) << "each corrupt member's data kept for a person";
}

// Certificates about to expire (made so: `certs renew all --validity 1h` on every host, which etcd
// takes on its next handshake): with the spec's window at 2 h, each host's controller renews its
// member's certificates, one host at a time, with no restart, while a client writes; openssl
// (the outside oracle) shows every certificate valid for a year again, the members keep their PIDs
// and answer new TLS connections. The CA inside the spec's warning window shows in auto status.
TEST_F(AutoMaintenance, CertificatesAboutToExpireAreRenewedOneHostAtATimeWithoutARestart) {
  ASSERT_NO_FATAL_FAILURE(bootstrap_three({"--cert-renew-before", "0"}));
  auto not_after = [](const std::string& cert) {
    auto r = run_process({"openssl", "x509", "-enddate", "-noout", "-in", cert});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const std::string date = r.output.substr(r.output.find('=') + 1);
    auto epoch = run_process({"date", "-u", "-d", date.substr(0, date.find('\n')), "+%s"});
    return std::stoll(epoch.output);
  };
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::map<std::string, int> pids;
  for (const auto& h : hosts_) {
    auto r = etcdadm({"certs", "renew", "all", "--certs-dir", h.certs(), "--validity", "1h"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const auto& name : {"server", "peer", "etcdctl-etcd-client", "apiserver-etcd-client"}) {
      EXPECT_LT(not_after(h.certs() + "/" + name + ".crt"), now + 2 * 3600) << h.name << " " << name;
    }
    pids[h.name] = running_pid(h.conf() + "/etcd.pid", bin_of(h) + "/etcd");
  }
  Writer writer(connection({&hosts_[0], &hosts_[1], &hosts_[2]}));
  seed(3, {"--cert-renew-before", "2h", "--ca-warn-before", "87600h"});
  ASSERT_TRUE(eventually(90s, [&] { return done("renew-certs").size() >= 3; }, "every host's certificates renewed")) << logs();
  std::this_thread::sleep_for(2s);
  writer.stop();
  const auto renewals = done("renew-certs");
  ASSERT_EQ(renewals.size(), 3u) << "once per host: " << logs();
  std::set<std::string> renewed_hosts;
  for (const auto& e : renewals) {
    renewed_hosts.insert(e.host);
    EXPECT_NE(e.outcome.find("server, peer, etcdctl-etcd-client, apiserver-etcd-client renewed"), std::string::npos) << e.outcome;
  }
  EXPECT_EQ(renewed_hosts.size(), 3u);
  for (const auto& h : hosts_) {
    for (const auto& name : {"server", "peer", "etcdctl-etcd-client", "apiserver-etcd-client"}) {
      EXPECT_GT(not_after(h.certs() + "/" + name + ".crt"), now + 300LL * 86400) << h.name << " " << name;
    }
    EXPECT_EQ(running_pid(h.conf() + "/etcd.pid", bin_of(h) + "/etcd"), pids[h.name]) << h.name << ": not restarted";
    // What the member serves on a new handshake, client and peer port: the renewed certificates.
    for (const auto& [at, file] : {std::pair{"127.0.0.1:" + std::to_string(h.client_port), std::string("server")},
                                   std::pair{address(h) + ":" + std::to_string(h.peer_port), std::string("peer")}}) {
      auto served = run_process({"sh", "-c", "openssl s_client -connect " + at + " -CAfile " + h.certs() + "/ca.crt -cert " +
                                                 h.certs() + "/etcdctl-etcd-client.crt -key " + h.certs() +
                                                 "/etcdctl-etcd-client.key </dev/null 2>/dev/null | openssl x509 -noout -enddate"});
      auto file_end = run_process({"openssl", "x509", "-enddate", "-noout", "-in", h.certs() + "/" + file + ".crt"});
      EXPECT_EQ(served.output, file_end.output) << h.name << " serves its renewed " << file << " certificate on " << at;
    }
    auto health = etcdctl(h, {"endpoint", "health"});
    EXPECT_EQ(health.exit_code, 0) << h.name << ": a new handshake with the renewed certificates: " << health.output;
  }
  std::printf("longest write gap: %lld ms (%lld writes)\n", static_cast<long long>(writer.longest_outage().count()),
              static_cast<long long>(writer.writes()));
  EXPECT_LT(writer.longest_outage(), 1500ms) << "no longer than one election (etcd's 1 s timeout): " << writer.last_error();
  // The CA (ten years) inside the 87600 h warning window: every host's record says so.
  auto status = auto_status();
  for (const auto& h : status["hosts"]) EXPECT_TRUE(h["caExpiresSoon"].get<bool>()) << status.dump(2);
  auto table = with_store({"auto", "status"});
  EXPECT_NE(table.output.find("WARNING: the cluster CA expires within"), std::string::npos) << table.output;
}

// The cluster CA rotated by the controllers (`etcdadm auto rotate-ca` on one host): every host
// re-issues its member's certificates by the new CA, served with the cross certificate, then each
// switches to the new CA and restarts its etcd, one host at a time, while a client writes; one
// controller is killed -9 right after its switch's file steps and finishes the switch when it comes
// back. Oracles: openssl (the served chain verifies against the new CA alone and against the old
// alone), etcdctl with a copy of the old client certificate and the old CA (answers: a switched
// member trusts client certificates of the old CA until it expires, for clients such as a
// kube-apiserver whose copies no host re-issues) and with the new (answers), etcd's PIDs (each
// restarted), HashKV (equal).
TEST_F(AutoMaintenance, TheClusterCaIsRotatedReissuedEverywhereThenSwitchedOneHostAtATime) {
  ASSERT_NO_FATAL_FAILURE(bootstrap_three({"--ca-rotate-before", "0"}));
  const std::string old_ca = read_file(hosts_[0].certs() + "/ca.crt");
  write_file_atomic(dir_ / "old-ca.crt", old_ca);
  write_file_atomic(dir_ / "old-client.crt", read_file(hosts_[0].certs() + "/etcdctl-etcd-client.crt"));
  write_file_atomic(dir_ / "old-client.key", read_file(hosts_[0].certs() + "/etcdctl-etcd-client.key"), 0600);
  std::map<std::string, int> pids;
  for (const auto& h : hosts_) pids[h.name] = running_pid(h.conf() + "/etcd.pid", bin_of(h) + "/etcd");
  const Host& killed = hosts_[1];
  autos_[killed.name].stop(5000ms);
  start_auto(killed, {{"ETCDADM_FAILPOINTS", "auto/ca-rotation/switched-files=kill"}});
  Writer writer(connection({&hosts_[0], &hosts_[1], &hosts_[2]}));
  auto started = with_store({"auto", "rotate-ca", "--certs-dir", hosts_[0].certs(), "--reason", "test"});
  ASSERT_EQ(started.exit_code, 0) << started.output;
  EXPECT_NE(started.output.find("every host re-issues its certificates, then switches one at a time"), std::string::npos) << started.output;
  auto again = with_store({"auto", "rotate-ca", "--certs-dir", hosts_[0].certs()});
  EXPECT_NE(again.exit_code, 0) << "one rotation at a time: " << again.output;
  EXPECT_NE(again.output.find("is under way"), std::string::npos) << again.output;
  ASSERT_TRUE(eventually(120s, [&] { return !autos_[killed.name].running(); }, "the controller killed inside its switch")) << logs();
  EXPECT_EQ(autos_[killed.name].wait(), 128 + SIGKILL) << logs();
  start_auto(killed);
  ASSERT_TRUE(eventually(180s, [&] { return !auto_status()["caRotation"]["completed"].is_null(); }, "the rotation completed")) << logs();
  writer.stop();

  const auto status = auto_status();
  const std::string id = status["caRotation"]["id"], new_sha = status["caRotation"]["newCaSha256"];
  std::set<std::string> reissued, switched;
  for (const auto& e : done("ca-reissue")) reissued.insert(e.host);
  for (const auto& e : done("ca-switch")) switched.insert(e.host);
  EXPECT_EQ(reissued.size(), 3u) << logs();
  EXPECT_EQ(switched.size(), 3u) << logs();
  const std::string new_ca = read_file(hosts_[0].certs() + "/ca.crt");
  EXPECT_NE(new_ca, old_ca);
  for (const auto& h : hosts_) {
    EXPECT_EQ(read_file(h.certs() + "/ca.crt"), new_ca) << h.name;
    EXPECT_EQ(read_file(h.certs() + "/ca.retired-" + id + ".crt"), old_ca) << h.name << ": the old CA kept";
    auto sha = run_process({"sh", "-c", "sha256sum " + h.certs() + "/ca.crt | cut -d' ' -f1"});
    EXPECT_EQ(sha.output.substr(0, 64), new_sha) << h.name;
    EXPECT_NE(running_pid(h.conf() + "/etcd.pid", bin_of(h) + "/etcd"), pids[h.name]) << h.name << ": restarted on the new CA";
    const std::string at = "127.0.0.1:" + std::to_string(h.client_port);
    for (const auto& ca : {h.certs() + "/ca.crt", dir_ / "old-ca.crt"}) {
      auto verified = run_process({"sh", "-c", "openssl s_client -connect " + at + " -verify_return_error -CAfile " + ca + " -cert " +
                                                   h.certs() + "/etcdctl-etcd-client.crt -key " + h.certs() +
                                                   "/etcdctl-etcd-client.key </dev/null 2>&1 | grep 'Verify return code'"});
      EXPECT_NE(verified.output.find("Verify return code: 0 (ok)"), std::string::npos) << h.name << " with " << ca << ": " << verified.output;
    }
    auto old_client = run_process({bin_of(h) + "/etcdctl", "--endpoints", "https://" + at, "--cacert", dir_ / "old-ca.crt",
                                   "--cert", dir_ / "old-client.crt", "--key", dir_ / "old-client.key", "--command-timeout", "3s",
                                   "endpoint", "health"});
    EXPECT_EQ(old_client.exit_code, 0) << h.name << " refuses a client of the old CA before it expires: " << old_client.output;
    EXPECT_NE(read_file(h.conf() + "/etcd.env").find("ETCD_TRUSTED_CA_FILE=" + h.certs() + "/clients-ca.crt"), std::string::npos)
        << h.name;
    EXPECT_EQ(read_file(h.certs() + "/clients-ca.crt"), new_ca + old_ca) << h.name;
    auto health = etcdctl(h, {"endpoint", "health"});
    EXPECT_EQ(health.exit_code, 0) << h.name << ": " << health.output;
  }
  std::set<uint64_t> hashes;
  for (const auto& e : etcdctl_json(hosts_[0], {"endpoint", "hashkv", "--cluster"})) hashes.insert(e["HashKV"]["hash"].get<uint64_t>());
  EXPECT_EQ(hashes.size(), 1u);
  std::printf("longest write gap: %lld ms (%lld writes)\n", static_cast<long long>(writer.longest_outage().count()),
              static_cast<long long>(writer.writes()));
  // One election at most, as the other restarting scenarios bound it: etcd's randomized election
  // timeout is 1-2 s (election-timeout 1000 ms). A switch costs no election (the leader's goes
  // first); what the writer sees is its own failover when a member restarts: a write in flight on a
  // member that stops waits for that stop (0.5 s in 1 of 5 runs here on 3.7, 21-28 ms otherwise).
  // Twice in CI on 3.7 it came to 1.1 and 1.5 s: likely that stop plus the dial timeout (0.5 s) on
  // a member still starting, which the client then paid on every call (it tried its endpoints in
  // the given order; it now keeps to the one that answered).
  EXPECT_LT(writer.longest_outage(), 3000ms) << "no longer than one election: " << writer.longest_outage_text() << "; "
                                             << writer.last_error() << logs();
}

}  // namespace
}  // namespace etcdadm::test

// etcdadm defrag on a 3-member TLS cluster of real etcd (the lifecycle fixture's hosts): a
// fragmented db (keys written, deleted and compacted away) defragmented member by member while a
// client writes. Oracles: etcdctl endpoint status (db sizes, the leader) and endpoint hashkv.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "etcd/client.h"
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

// `etcdadm defrag --cluster`: a backup first, then followers, then the leader after its leadership
// moved; every member's file shrinks to what it holds, the data stays equal, writes go on. Asked
// again with a threshold, nothing is due; with a member down, nothing is done at all.
TEST_F(Maintenance, DefragClusterGoesFollowersFirstLeaderLastUnderWritesAndRefusesWithAMemberDown) {
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  ASSERT_NO_FATAL_FAILURE(fragment(48));
  auto before = statuses();
  std::string leader_before;
  for (const auto& [name, s] : before) {
    EXPECT_GT(s.db_size - s.in_use, 40 << 20) << name << " is fragmented";
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
    EXPECT_LT(s.db_size - s.in_use, 8 << 20) << name;
  }
  EXPECT_EQ(cluster_hashes().size(), 1u) << "every member holds the same data";
  auto listed = etcdadm({"backup", "list", "--store", store, "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find(result["backup"].get<std::string>()), std::string::npos) << listed.output;

  // A threshold nothing meets: no member is touched.
  auto again = etcdadm(with({"defrag", "--cluster", "--skip-backup", "--min-free-percent", "50", "--min-free-mib", "16"}));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  auto none = json_of(again);
  EXPECT_TRUE(none["members"].empty()) << again.output;
  EXPECT_EQ(none["skipped"].size(), 3u) << again.output;

  // A member down: refused, naming it, nothing done.
  stop_pid_file(hosts_[2].conf() + "/etcd.pid", bin_of(hosts_[2]) + "/etcd", 3000ms);
  auto refused = etcdadm(with({"defrag", "--cluster", "--skip-backup"}));
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("m3"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("does not answer"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("every member must be healthy"), std::string::npos) << refused.output;
}

}  // namespace
}  // namespace etcdadm::test

namespace etcdadm::test {
namespace {

// A cluster with a 24 MiB quota driven into NOSPACE by one key rewritten over and over. With the
// default margin (1000 revisions) nothing can be compacted: the recovery says which quota to raise
// and leaves the alarm armed and the data as it was. With a margin of 3, `alarm recover` takes a
// backup, compacts, defragments and disarms, and writes go on; the backup holds the data.
TEST_F(Maintenance, NospaceIsRecoveredWithoutAPersonAndAQuotaItCannotGetUnderIsReported) {
  const int64_t quota = 24 << 20;
  ASSERT_NO_FATAL_FAILURE(three_member_cluster({"--quota-backend-bytes", std::to_string(quota)}));
  EtcdClient client(connection({&hosts_[0], &hosts_[1], &hosts_[2]}));
  for (int i = 0; i < 20; ++i) client.put("/registry/pods/p" + std::to_string(i), "live");
  const int history = fill_until_nospace(client, [](int) { return std::string("/hot"); });
  ASSERT_GT(history, 5);
  auto listed = etcdadm({"alarm", "list", "--config-dir", hosts_[0].conf(), "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find("NOSPACE"), std::string::npos) << listed.output;

  // Everything within the margin: reported with the flag to raise, the alarm left armed.
  auto refused = etcdadm({"alarm", "recover", "--config-dir", hosts_[0].conf(), "--skip-backup"});
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("--quota-backend-bytes"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("stays armed"), std::string::npos) << refused.output;
  EXPECT_NE(etcdctl(hosts_[0], {"alarm", "list"}).output.find("NOSPACE"), std::string::npos) << "left armed";
  EXPECT_THROW(client.put("/refused", "x"), Error) << "writes are still refused";

  const std::string store = dir_ / "store";
  auto r = etcdadm({"alarm", "recover", "--config-dir", hosts_[0].conf(), "--store", store, "--keep-revisions", "3",
                    "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = json_of(r);
  EXPECT_TRUE(j["disarmed"].get<bool>()) << r.output;
  EXPECT_EQ(j["compactedTo"].get<int64_t>(), j["revision"].get<int64_t>() - 3) << r.output;
  EXPECT_EQ(j["defragmented"].size(), 3u) << r.output;
  EXPECT_LT(j["largestDbAfter"].get<int64_t>(), quota * 9 / 10) << r.output;
  EXPECT_EQ(j["quota"].get<int64_t>(), quota) << r.output;
  EXPECT_NO_THROW(client.put("/after", "writes go on"));
  auto alarms = etcdctl(hosts_[0], {"alarm", "list"});
  EXPECT_EQ(alarms.output.find("NOSPACE"), std::string::npos) << "etcdctl lists no alarm: " << alarms.output;

  // The backup taken first: at the alarm's revision, every key there.
  const std::string backup = j["backup"];
  auto backups = etcdadm({"backup", "list", "--store", store, "-o", "json"});
  ASSERT_EQ(backups.exit_code, 0) << backups.output;
  auto list = nlohmann::json::parse(backups.output.substr(backups.output.find('[')));
  ASSERT_EQ(list.size(), 1u) << backups.output;
  EXPECT_EQ(list[0]["backup"], backup);
  EXPECT_EQ(list[0]["revision"].get<int64_t>(), j["revision"].get<int64_t>()) << backups.output;
  auto got = etcdadm({"backup", "get", backup, "/registry/pods/", "--prefix", "--store", store, "-o", "json"});
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_EQ(json_of(got)["count"].get<int64_t>(), 20) << got.output;
}

}  // namespace
}  // namespace etcdadm::test

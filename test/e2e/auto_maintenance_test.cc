// The controllers' maintenance (`etcdadm auto`, docs/self-management.md "Maintenance"): hosts as
// processes on loopback sharing a local store, a cluster of real etcd whose db is fragmented under
// the controllers. Oracles: etcdctl endpoint status (db sizes, the leader) and hashkv; the store's
// events and maintenance record.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "controller/records.h"
#include "etcd/client.h"
#include "test/support/auto_fixture.h"
#include "test/support/writer.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

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

// Fragmentation past the spec's threshold: the acting controller defragments the followers, then
// its own member after moving leadership away, a backup first, while a client writes; killed right
// after its first member, it finishes with the others when it comes back. Then a schedule
// defragments every member again, and the record in the store shows when each was done.
TEST_F(AutoMaintenance, FragmentedMembersAreDefragmentedFollowersFirstLeaderLastAndOnTheSchedule) {
  ASSERT_NO_FATAL_FAILURE(bootstrap_three({"--defrag-free-percent", "0"}));
  ASSERT_NO_FATAL_FAILURE(fragment(40));
  std::string leader;
  const auto before = sizes(&leader);
  ASSERT_FALSE(leader.empty());
  const Host& acting = *std::find_if(hosts_.begin(), hosts_.end(), [&](const Host& h) { return h.name == leader; });
  EXPECT_TRUE(done("defrag").empty()) << "with the threshold off, nothing is defragmented";

  // The acting controller dies right after its first member (a follower's) is done.
  autos_[acting.name].stop(5000ms);
  start_auto(acting, {{"ETCDADM_FAILPOINTS", "auto/defrag/member-done=kill"}});
  Writer writer(connection({&hosts_[0], &hosts_[1], &hosts_[2]}));
  seed(3, {"--defrag-free-percent", "50", "--defrag-min-free-mib", "16"});
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
  for (const auto& m : status["defrag"]["members"]) EXPECT_LT(m["dbSizeAfter"].get<int64_t>(), 8 << 20) << status.dump(2);
}

// etcd's NOSPACE alarm under the controllers (a 24 MiB quota, one key rewritten until etcd refuses):
// with the default margin nothing can be compacted, so the acting controller reports the quota to
// raise, once, and leaves the alarm armed; with the spec's margin lowered it recovers on its own (a
// backup, compaction, every member defragmented, the disarm) and writes go on.
TEST_F(AutoMaintenance, NospaceIsRecoveredByTheActingControllerAndAQuotaItCannotGetUnderIsReportedOnce) {
  const int64_t quota = 24 << 20;
  member_extra_ = {"--quota-backend-bytes", std::to_string(quota)};
  ASSERT_NO_FATAL_FAILURE(bootstrap_three({"--defrag-free-percent", "0"}));
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
  EXPECT_EQ(tried[0].outcome.rfind("failed:", 0), 0u) << tried[0].outcome;
  EXPECT_NE(tried[0].outcome.find("--quota-backend-bytes"), std::string::npos) << tried[0].outcome;
  EXPECT_NE(tried[0].outcome.find("stays armed"), std::string::npos) << tried[0].outcome;
  EXPECT_THROW(client.put("/refused", "x"), Error) << "the alarm is left armed";

  const size_t defrags_before = done("defrag").size();
  EXPECT_EQ(defrags_before, 3u) << "the failed recovery defragmented every member too";
  seed(3, {"--nospace-keep-revisions", "3"});
  ASSERT_TRUE(eventually(60s, [&] { return done("recover-space").size() == 1; }, "the recovery with the lower margin"));
  EXPECT_NE(done("recover-space")[0].outcome.find("NOSPACE disarmed"), std::string::npos) << done("recover-space")[0].outcome;
  EXPECT_NO_THROW(client.put("/after", "writes go on"));
  EXPECT_EQ(done("defrag").size(), defrags_before + 3) << "each member defragmented once by the recovery";
  bool backed_up = false;
  for (const auto& e : done("backup")) backed_up = backed_up || e.reason.rfind("before recover-space", 0) == 0;
  EXPECT_TRUE(backed_up) << "a backup before the recovery";
  auto status = auto_status();
  EXPECT_TRUE(status["lastSpaceRecovery"]["disarmed"].get<bool>()) << status.dump(2);
  EXPECT_LT(status["lastSpaceRecovery"]["largestDbAfter"].get<int64_t>(), quota * 9 / 10) << status.dump(2);
  auto hashes = hash_kv({&hosts_[0], &hosts_[1], &hosts_[2]});
  EXPECT_EQ(std::set<uint64_t>({hashes["m1"], hashes["m2"], hashes["m3"]}).size(), 1u);
}

}  // namespace
}  // namespace etcdadm::test

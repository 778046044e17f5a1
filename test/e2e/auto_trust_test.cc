// `etcdadm auto` handed what a store writer, a typo or an outage can put in front of it: the
// controllers must never be tricked into breaking the cluster, and must say what they refuse
// (issue "Controllers you can trust"). Hosts as processes on loopback, as in auto_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/fs.h"
#include "common/subprocess.h"
#include "controller/records.h"
#include "store/backend/local/local_store.h"
#include "test/support/auto_fixture.h"
#include "test/support/etcd_manager_files.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

class AutoTrust : public AutoFixture {
 protected:
  size_t members_listed() {
    auto r = etcdctl(hosts_[0], {"member", "list", "-w", "json"});
    return etcdctl_answer(r.output).value("members", nlohmann::json::array()).size();
  }
  bool every_host_waits_for(const std::string& words) {
    auto records = host_records();
    return records.size() == hosts_.size() && std::all_of(records.begin(), records.end(), [&](const HostRecord& r) {
             return r.waiting_for.find(words) != std::string::npos;
           });
  }
  uint64_t sequence_of(const std::string& host) {
    for (const auto& r : host_records()) {
      if (r.name == host) return r.sequence;
    }
    return 0;
  }
};

// Seen in a trial: a spec of 0 members made the acting controller remove two healthy members, a
// garbled shared record froze a host (no heartbeat, its crashed etcd left down), and `auto status`
// called a store that was renamed away "Spec: none". Now: every host names what it refuses,
// removes nothing, writes its heartbeat and restarts its own member, and status fails loudly.
TEST_F(AutoTrust, ASharedRecordItCannotObeyIsNamedAndNeverActedOnWhileEachHostKeepsItsOwnMember) {
  // A heartbeat the others would take for a dead host is refused before anything starts.
  std::vector<std::string> args = {"auto", "--heartbeat", "90s"};
  for (const auto& f : auto_flags(hosts_[0])) args.push_back(f);
  auto slow = with_store(args);
  EXPECT_NE(slow.exit_code, 0) << slow.output;
  EXPECT_NE(slow.output.find("--heartbeat 90s is out of range: 1s to 45s"), std::string::npos) << slow.output;
  ASSERT_NO_FATAL_FAILURE(bootstrap_three());

  // etcd-manager-ctl configure-cluster stores whatever it is given.
  write_spec_as_etcd_manager(store_, 0, release_.version);
  EXPECT_TRUE(eventually(30s, [&] { return every_host_waits_for("memberCount 0 is outside 1-9"); },
                         "every host refusing the spec of 0 members"));
  std::this_thread::sleep_for(5s);  // five rounds of each controller
  EXPECT_EQ(members_listed(), 3u);
  auto status = with_store({"auto", "status"});
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("REFUSED by every controller: memberCount 0 is outside 1-9"), std::string::npos)
      << status.output;
  // Refused by name, and said once per host, not once per round.
  std::map<std::string, int> refusals;
  for (const auto& e : events()) {
    if (e.action == "wait" && e.reason.find("memberCount 0") != std::string::npos) ++refusals[e.host];
  }
  EXPECT_EQ(refusals.size(), 3u);
  for (const auto& [host, n] : refusals) EXPECT_EQ(n, 1) << host;
  write_spec_as_etcd_manager(store_, 3, "3.5");
  EXPECT_TRUE(eventually(30s, [&] { return every_host_waits_for("etcdVersion \"3.5\" is no etcd release"); },
                         "every host refusing version 3.5"));

  // A plan that does not parse: each host still writes its heartbeat and restarts its own member.
  write_spec_as_etcd_manager(store_, 3, release_.version);
  write_file_atomic(store_ + "/" + kAutoPlanKey, "{\"format\": \"etcdadm-auto-plan/1\", \"members\": [", 0600, true);
  EXPECT_TRUE(eventually(30s, [&] { return every_host_waits_for("etcdadm-auto/plan.json"); },
                         "every host naming the plan it cannot read"));
  const Host& h2 = hosts_[1];
  const std::string pid_file = h2.conf() + "/etcd.pid";
  const int pid = std::stoi(read_file(pid_file));
  const uint64_t sequence = sequence_of(h2.name);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_TRUE(eventually(30s, [&] {
    return path_exists(pid_file) && std::stoi(read_file(pid_file)) != pid && one_healthy_cluster(3);
  }, "the killed member started again by its controller"));
  EXPECT_TRUE(eventually(15s, [&] { return sequence_of(h2.name) > sequence; }, "h2's heartbeat"));
  EXPECT_EQ(members_listed(), 3u);

  // The store renamed away: status is an error, never "no spec".
  const std::string moved = store_ + ".moved";
  ASSERT_EQ(::rename(store_.c_str(), moved.c_str()), 0);
  status = with_store({"auto", "status"});
  EXPECT_NE(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("does not exist"), std::string::npos) << status.output;
  EXPECT_EQ(status.output.find("Spec:"), std::string::npos) << status.output;
  std::this_thread::sleep_for(3s);  // the controllers meanwhile: the store cannot be read
  // Nothing made the store's directory again meanwhile (a heartbeat into an empty new store).
  EXPECT_FALSE(path_exists(store_)) << run_process({"find", store_}).output;
  ASSERT_EQ(::rename(moved.c_str(), store_.c_str()), 0);
  EXPECT_EQ(members_listed(), 3u);

  // Fixed by a person: the controllers go back to work.
  LocalStore(store_).remove(kAutoPlanKey);
  EXPECT_TRUE(eventually(30s, [&] {
    int at_work = 0;
    for (const auto& r : host_records()) {
      at_work += r.waiting_for.find("the leader's controller acts") != std::string::npos ||
                 r.waiting_for.find("as the spec asks") != std::string::npos;
    }
    return at_work == 3;
  },
                         "the controllers back at work"));
  EXPECT_TRUE(one_healthy_cluster(3));
}

// Seen in a trial: a fourth controller started as --name m1 (its own dirs and ports) ran as a spare
// and the two rewrote m1's record in turn, no word in either log. The name is held by the host ID
// that claimed it: the second claimant does nothing, writes nothing, and says why.
TEST_F(AutoTrust, ASecondHostUnderATakenNameIsRefusedAndWritesNothing) {
  ASSERT_NO_FATAL_FAILURE(bootstrap_three());
  LocalStore store(store_);
  const auto held = parse_host_record(store.read_small(host_record_key("m1")), "m1");
  ASSERT_TRUE(is_host_id(held.host_id)) << held.host_id;

  Host impostor;
  impostor.name = "m1";
  impostor.root = dir_ / "impostor";
  impostor.client_port = free_port();
  impostor.peer_port = free_port();
  hosts_.push_back(impostor);
  copy_ca(hosts_[0], hosts_.back());
  start_auto(hosts_.back(), {}, "impostor");
  EXPECT_TRUE(eventually(30s, [&] {
    for (const auto& e : events()) {
      if (e.host == "m1" && e.action == "wait" && e.reason.find("another host runs as m1 (host ID " + held.host_id) == 0)
        return true;
    }
    return false;
  }, "the second m1 saying it is refused"));
  // Ten rounds of both: the record stays the first m1's, and the first m1 never lost it.
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(1s);
    const auto now = parse_host_record(store.read_small(host_record_key("m1")), "m1");
    EXPECT_EQ(now.host_id, held.host_id);
    EXPECT_EQ(now.peer_url, held.peer_url);
  }
  EXPECT_EQ(read_file(log_of(hosts_[0])).find("another writer replaced"), std::string::npos);
  EXPECT_TRUE(is_empty_data_dir(hosts_.back().data()) || !path_exists(hosts_.back().data()));
  autos_.at("impostor").stop(5000ms);
  EXPECT_TRUE(one_healthy_cluster(3));
}

}  // namespace
}  // namespace etcdadm::test

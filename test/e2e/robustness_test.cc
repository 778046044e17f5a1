// The robustness harness (issue "Controllers you can trust"): three hosts run their members and
// `etcdadm auto` while clients write, read and compare-and-set through a schedule of faults drawn
// from a printed seed; afterwards the recorded history must be linearizable (lincheck, porcupine)
// and the invariants hold: one cluster, every voter healthy with the same data, no member removed
// for a fault it recovered from. Replay a schedule with ETCDADM_ROBUSTNESS_SEED=<seed>; run more
// with ETCDADM_ROBUSTNESS_SCHEDULES=<n> (each on a fresh cluster).
//
// This first part injects process faults (kill -9 and SIGSTOP of a member's etcd, of a controller,
// the leader's among them); partitions in network namespaces, store faults, disks and clocks come
// next (docs/testing.md, "Robustness").
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "common/fs.h"
#include "test/support/auto_fixture.h"
#include "test/support/kv_workload.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

class Robustness : public AutoFixture {
 protected:
  int pid_of_etcd(const Host& h) {
    const std::string file = h.conf() + "/etcd.pid";
    return path_exists(file) ? std::atoi(read_file(file).c_str()) : 0;
  }
  // The host whose member leads now (nullptr when none answers with a leader).
  const Host* leader_host() {
    for (const auto& h : hosts_) {
      auto r = etcdctl(h, {"endpoint", "status", "-w", "json"});
      if (r.exit_code != 0) continue;
      auto j = etcdctl_answer(r.output)["Status"];
      if (j.value("leader", uint64_t{0}) != 0 && j["leader"] == j["header"]["member_id"]) return &h;
    }
    return nullptr;
  }
  std::set<std::string> member_ids() {
    std::set<std::string> ids;
    for (const auto& m : etcdctl_answer(etcdctl(hosts_[0], {"member", "list", "-w", "json"}).output)
                             .value("members", nlohmann::json::array()))
      ids.insert(std::to_string(m["ID"].get<uint64_t>()));
    return ids;
  }

  // One schedule: `faults` faults, each on a host the seed picks (the leader's half the time),
  // with a pause of 2-5 s between them; every fault is mended by the controllers or undone by the
  // schedule itself (a frozen process is thawed).
  void run_schedule(uint64_t seed, int faults) {
    std::mt19937_64 rng(seed);
    std::string described;
    for (int i = 0; i < faults; ++i) {
      const Host* target = (rng() % 2 == 0) ? leader_host() : nullptr;
      if (target == nullptr) target = &hosts_[rng() % hosts_.size()];
      const int kind = static_cast<int>(rng() % 4);
      const auto hold = std::chrono::milliseconds(1000 + static_cast<int>(rng() % 3000));
      if (kind == 0) {  // the member dies: its controller starts it again
        described += "kill etcd of " + target->name + "; ";
        if (int pid = pid_of_etcd(*target); pid > 0) ::kill(pid, SIGKILL);
      } else if (kind == 1) {  // the member freezes (a stuck disk, a paused VM), then goes on
        described += "freeze etcd of " + target->name + " " + std::to_string(hold.count()) + " ms; ";
        if (int pid = pid_of_etcd(*target); pid > 0) {
          ::kill(pid, SIGSTOP);
          std::this_thread::sleep_for(hold);
          ::kill(pid, SIGCONT);
        }
      } else if (kind == 2) {  // the controller dies and comes back
        described += "kill controller of " + target->name + "; ";
        autos_[target->name].kill_now(SIGKILL);
        autos_[target->name].wait();
        std::this_thread::sleep_for(hold);
        start_auto(*target);
      } else {  // the controller freezes
        described += "freeze controller of " + target->name + " " + std::to_string(hold.count()) + " ms; ";
        ::kill(autos_[target->name].pid(), SIGSTOP);
        std::this_thread::sleep_for(hold);
        ::kill(autos_[target->name].pid(), SIGCONT);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2000 + static_cast<int>(rng() % 3000)));
    }
    std::cout << "schedule " << seed << ": " << described << std::endl;
    RecordProperty("schedule_" + std::to_string(seed), described);
  }
};

TEST_F(Robustness, RandomProcessFaultsUnderTrafficLeaveALinearizableHistoryAndOneWholeCluster) {
  const char* fixed = std::getenv("ETCDADM_ROBUSTNESS_SEED");
  const uint64_t seed = fixed != nullptr ? std::strtoull(fixed, nullptr, 10) : std::random_device{}();
  std::cout << "robustness seed " << seed << " (replay: ETCDADM_ROBUSTNESS_SEED=" << seed << ")" << std::endl;
  SCOPED_TRACE("robustness seed " + std::to_string(seed));
  ASSERT_NO_FATAL_FAILURE(bootstrap_three({"--replace-after", "60s"}));
  const auto members_before = member_ids();

  KvWorkload::Options w;
  w.connection = connection({&hosts_[0], &hosts_[1], &hosts_[2]});
  w.seed = seed;
  KvWorkload workload(w);
  run_schedule(seed, 5);
  // Every fault mended: one cluster of the same three members, each healthy.
  EXPECT_TRUE(eventually(60s, [&] { return one_healthy_cluster(3); }, "one healthy cluster of three after the schedule"));
  std::this_thread::sleep_for(2s);  // requests after the last fault, through every member
  workload.stop();

  EXPECT_EQ(member_ids(), members_before) << "no member was replaced for a fault it recovered from";
  auto hashes = hash_kv({&hosts_[0], &hosts_[1], &hosts_[2]});
  for (const auto& [name, hash] : hashes) EXPECT_EQ(hash, hashes.begin()->second) << name;
  EXPECT_GT(workload.acknowledged_writes(), 50) << "the workload made progress through the faults";
  const std::string verdict = workload.verdict(dir_.path());
  std::cout << "history: " << workload.requests() << " requests (" << workload.unknown()
            << " without an answer), " << workload.acknowledged_writes() << " acknowledged writes: " << verdict
            << std::endl;
  EXPECT_EQ(verdict.rfind("linearizable", 0), 0u) << verdict << " (history in " << dir_.path() << "/history.jsonl)";
}

}  // namespace
}  // namespace etcdadm::test

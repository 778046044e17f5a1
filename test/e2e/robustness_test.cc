// The robustness harness (issue "Controllers you can trust"): three hosts, each a network
// namespace of its own (test/support/netns_lab.h) running its member and `etcdadm auto`, go
// through random schedules of faults while clients write, read and compare-and-set. A schedule
// is one or two faults drawn from its seed (the run's seed plus its index, printed), then the
// wait until the controllers have mended everything; after each schedule its history must be
// linearizable (lincheck, porcupine) and the invariants hold: one cluster of the same three
// members (none removed for a fault it recovered from, no second cluster), every voter healthy,
// the same HashKV on all. Replay with ETCDADM_ROBUSTNESS_SEED=<seed> (the run's seed: its
// schedules in order) and ETCDADM_ROBUSTNESS_SCHEDULES=<n> (default 20); the soak runs more
// (docs/testing.md, "Robustness").
//
// The faults: kill -9 and SIGSTOP of a member's etcd and of a controller, a host cut off from the
// others both ways (the leader's half the time), and one-way loss between two hosts. Store
// faults, data disks and clocks come next.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "common/fs.h"
#include "test/support/auto_fixture.h"
#include "test/support/kv_workload.h"
#include "test/support/netns_lab.h"
#include "test/support/skips.h"

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

  void SetUp() override {
    AutoFixture::SetUp();
    if (const std::string why = NetnsLab::unavailable(); !why.empty()) ETCDADM_SKIP_OUTSIDE_CI() << why;
    lab_ = std::make_unique<NetnsLab>(static_cast<int>(hosts_.size()));
    for (size_t i = 0; i < hosts_.size(); ++i) {
      hosts_[i].netns = lab_->netns(static_cast<int>(i));
      hosts_[i].client_address = lab_->address(static_cast<int>(i));
    }
  }
  void TearDown() override {
    if (lab_) lab_->heal();  // a schedule that failed half way
    AutoFixture::TearDown();
    lab_.reset();
  }

  int index_of(const Host& h) const { return static_cast<int>(&h - hosts_.data()); }

  enum Fault { kKillEtcd, kFreezeEtcd, kKillController, kFreezeController, kIsolateHost, kIsolateLeader, kOneWayLoss, kFaultKinds };

  // One fault on a host the seed picks, held for `hold`; returns what it did. Every fault is
  // mended by the controllers (a dead member started again) or undone here (a frozen process
  // thawed, a partition healed).
  std::string inject(Fault kind, std::mt19937_64& rng) {
    const Host* target = kind == kIsolateLeader || rng() % 2 == 0 ? leader_host() : nullptr;
    if (target == nullptr) target = &hosts_[rng() % hosts_.size()];
    const auto hold = std::chrono::milliseconds(1000 + static_cast<int>(rng() % 3000));
    const std::string held = " " + std::to_string(hold.count()) + " ms";
    switch (kind) {
      case kKillEtcd:  // the member dies: its controller starts it again
        if (int pid = pid_of_etcd(*target); pid > 0) ::kill(pid, SIGKILL);
        return "kill etcd of " + target->name;
      case kFreezeEtcd:  // a stuck disk, a paused VM
        if (int pid = pid_of_etcd(*target); pid > 0) {
          ::kill(pid, SIGSTOP);
          std::this_thread::sleep_for(hold);
          ::kill(pid, SIGCONT);
        }
        return "freeze etcd of " + target->name + held;
      case kKillController:
        autos_[target->name].kill_now(SIGKILL);
        autos_[target->name].wait();
        std::this_thread::sleep_for(hold);
        start_auto(*target);
        return "kill controller of " + target->name + ", started again after" + held;
      case kFreezeController:
        ::kill(autos_[target->name].pid(), SIGSTOP);
        std::this_thread::sleep_for(hold);
        ::kill(autos_[target->name].pid(), SIGCONT);
        return "freeze controller of " + target->name + held;
      case kIsolateHost:
      case kIsolateLeader:
        lab_->isolate(index_of(*target));
        std::this_thread::sleep_for(hold + std::chrono::seconds(1));  // past an election
        lab_->heal();
        return "isolate " + target->name + (kind == kIsolateLeader ? " (the leader)" : "") + " " +
               std::to_string(hold.count() + 1000) + " ms";
      case kOneWayLoss: {
        const Host* to = &hosts_[(index_of(*target) + 1 + rng() % (hosts_.size() - 1)) % hosts_.size()];
        lab_->cut(index_of(*target), index_of(*to));
        std::this_thread::sleep_for(hold + std::chrono::seconds(1));
        lab_->heal();
        return "drop what " + target->name + " sends to " + to->name + " " + std::to_string(hold.count() + 1000) + " ms";
      }
      case kFaultKinds:
        break;
    }
    return "";
  }

  // Schedule `index` of the run seeded `seed`: its first fault's kind goes round the kinds (every
  // kind comes up in any seven schedules in a row), a second one follows a third of the time.
  void run_schedule(uint64_t seed, int index, const std::set<std::string>& members_before) {
    const uint64_t schedule_seed = seed + static_cast<uint64_t>(index);
    std::mt19937_64 rng(schedule_seed);
    const std::string dir = dir_ / ("schedule-" + std::to_string(index));
    make_dirs(dir, 0755);
    KvWorkload::Options w;
    w.connection = connection({&hosts_[0], &hosts_[1], &hosts_[2]});
    w.seed = schedule_seed;
    w.key_prefix = "/robustness/" + std::to_string(index) + "/";  // each history starts from no keys
    KvWorkload workload(w);
    std::this_thread::sleep_for(500ms);
    std::string described = inject(static_cast<Fault>((index + rng() % kFaultKinds) % kFaultKinds), rng);
    if (rng() % 3 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500 + static_cast<int>(rng() % 1500)));
      described += "; " + inject(static_cast<Fault>(rng() % kFaultKinds), rng);
    }
    const std::string trace = "schedule " + std::to_string(index) + " (seed " + std::to_string(schedule_seed) + "): " + described;
    std::cout << trace << std::endl;
    SCOPED_TRACE(trace);
    RecordProperty("schedule_" + std::to_string(index), described);
    ASSERT_TRUE(eventually(60s, [&] { return one_healthy_cluster(3); }, "one healthy cluster of three after the schedule"));
    std::this_thread::sleep_for(1s);  // requests after the last fault, through every member
    workload.stop();

    EXPECT_EQ(member_ids(), members_before) << "no member was replaced for a fault it recovered from";
    auto hashes = hash_kv({&hosts_[0], &hosts_[1], &hosts_[2]});
    for (const auto& [name, hash] : hashes) EXPECT_EQ(hash, hashes.begin()->second) << name;
    EXPECT_GT(workload.acknowledged_writes(), 10) << "the workload made progress through the faults";
    const std::string verdict = workload.verdict(dir);
    std::cout << "  history: " << workload.requests() << " requests (" << workload.unknown() << " without an answer), "
              << workload.acknowledged_writes() << " acknowledged writes: " << verdict << std::endl;
    EXPECT_EQ(verdict.rfind("linearizable", 0), 0u) << verdict << " (history in " << dir << "/history.jsonl)";
  }

  std::unique_ptr<NetnsLab> lab_;
};

TEST_F(Robustness, RandomFaultSchedulesUnderTrafficLeaveLinearizableHistoriesAndOneWholeCluster) {
  const char* fixed = std::getenv("ETCDADM_ROBUSTNESS_SEED");
  const uint64_t seed = fixed != nullptr ? std::strtoull(fixed, nullptr, 10) : std::random_device{}();
  const char* count = std::getenv("ETCDADM_ROBUSTNESS_SCHEDULES");
  const int schedules = count != nullptr ? std::atoi(count) : 20;
  std::cout << "robustness seed " << seed << ", " << schedules << " schedules (replay: ETCDADM_ROBUSTNESS_SEED=" << seed
            << ")" << std::endl;
  SCOPED_TRACE("robustness seed " + std::to_string(seed));
  ASSERT_NO_FATAL_FAILURE(bootstrap_three({"--replace-after", "60s"}));
  const auto members_before = member_ids();
  for (int i = 0; i < schedules && !HasFailure(); ++i) ASSERT_NO_FATAL_FAILURE(run_schedule(seed, i, members_before));
}

}  // namespace
}  // namespace etcdadm::test

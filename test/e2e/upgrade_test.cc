// etcdadm upgrade plan / apply / rollback on real etcd binaries of every pinned minor: a 3-member
// TLS cluster (process init system, each host with its own install dir) changed member by member
// while a client writes. The releases are the suite's binaries packed as etcd publishes them
// (tarball + SHA256SUMS) behind one file:// release URL. Oracles: etcdctl (endpoint status and
// hashkv), curl on etcd's /version (the cluster version), and each old version's own restore tool
// and etcd on the backup taken before each step.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "common/fs.h"
#include "etcd/client.h"
#include "etcd/etcd_version.h"
#include "etcdadm/member_config.h"
#include "etcdadm/release/install.h"
#include "test/support/lifecycle_fixture.h"
#include "test/support/skips.h"
#include "test/support/writer.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class Upgrade : public LifecycleFixture {
 protected:
  void SetUp() override {
    LifecycleFixture::SetUp();
    for (auto& h : hosts_) h.own_bin = h.root + "/bin";
  }

  // The version pinned for `minor`, its release laid out beside the others behind the one release
  // URL (as etcd's GitHub releases are) the first time it is asked for.
  std::string version_of(const std::string& minor) {
    if (!versions_.count(minor)) versions_[minor] = make_local_release(dir_ / "releases", etcd_release(minor)).version;
    return versions_.at(minor);
  }

  ProcessResult upgrade(const std::string& verb, const Host& h, const std::string& version,
                        std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"upgrade", verb, "--config-dir", h.conf(), "--release-url", release_.base_url,
                                     "--cache-dir", dir_ / "cache", "-o", "json"};
    if (!version.empty()) {
      args.push_back("--version");
      args.push_back(version);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return etcdadm(args);
  }

  // etcd's own answer on /version (curl with the etcdctl client certificate).
  nlohmann::json version_endpoint(const Host& h) {
    RunOptions o;
    o.timeout = 20s;
    auto r = run_process({"curl", "-sS", "--max-time", "5", "--cacert", h.certs() + "/ca.crt", "--cert",
                          h.certs() + "/etcdctl-etcd-client.crt", "--key", h.certs() + "/etcdctl-etcd-client.key",
                          h.client_url() + "/version"},
                         o);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output);
  }
  std::string cluster_version(const Host& h) { return version_endpoint(h).value("etcdcluster", ""); }

  // `etcdctl endpoint status --cluster` of the version `h` runs now: member ID -> {version, leader}.
  struct Status {
    std::string version;
    bool leader = false;
  };
  // Whether `h`'s member leads (etcdctl endpoint status of its own endpoint).
  bool is_leader(const Host& h) {
    auto st = etcdctl_json(h, {"endpoint", "status"});
    return !st.empty() && st[0]["Status"]["leader"] == st[0]["Status"]["header"]["member_id"];
  }

  std::map<uint64_t, Status> endpoint_status(const Host& h) {
    std::map<uint64_t, Status> out;
    for (const auto& e : etcdctl_json(h, {"endpoint", "status", "--cluster"})) {
      Status s;
      s.version = e["Status"]["version"];
      uint64_t id = e["Status"]["header"]["member_id"];
      s.leader = e["Status"]["leader"].get<uint64_t>() == id;
      out[id] = s;
    }
    return out;
  }

  std::map<std::string, std::string> versions_;
};

// A 3-member TLS cluster from the oldest pinned etcd to the newest, one minor at a time, every
// member through `etcdadm upgrade apply` in the order `upgrade plan` gives, while a client writes.
TEST_F(Upgrade, RollingUpgradeThroughEveryMinorUnderWritesLeaderLast) {
  const auto minors = pinned_etcd_minors();
  if (etcd_under_test().minor != minors.front()) {
    ETCDADM_SKIP_BY_DESIGN() << "the chain runs once, in the suite of the oldest pinned minor (" << minors.front() << ")";
  }
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  std::vector<const Host*> all = {&hosts_[0], &hosts_[1], &hosts_[2]};
  Writer writer(connection(all));
  std::this_thread::sleep_for(500ms);

  std::string from_minor = minors.front();
  for (std::string to_minor = pinned_minor_beside(from_minor, 1); !to_minor.empty(); from_minor = to_minor, to_minor = pinned_minor_beside(to_minor, 1)) {
    SCOPED_TRACE(from_minor + " -> " + to_minor);
    const std::string target = version_of(to_minor);
    const std::string store = dir_ / ("store-" + to_minor);

    auto planned = upgrade("plan", hosts_[0], target);
    ASSERT_EQ(planned.exit_code, 0) << planned.output;
    auto plan = json_of(planned);
    ASSERT_TRUE(plan["allowed"].get<bool>()) << plan.dump(2);
    EXPECT_EQ(plan["clusterVersion"], from_minor + ".0");
    ASSERT_EQ(plan["members"].size(), 3u);
    // Followers first, the leader last.
    EXPECT_TRUE(plan["members"][2]["leader"].get<bool>()) << plan.dump(2);
    for (int i = 0; i < 2; ++i) EXPECT_FALSE(plan["members"][i]["leader"].get<bool>()) << plan.dump(2);

    std::string first_backup;
    int leaders_moved = 0;
    for (size_t i = 0; i < 3; ++i) {
      const std::string name = plan["members"][i]["name"];
      const Host& h = *std::find_if(hosts_.begin(), hosts_.end(), [&](const Host& x) { return x.name == name; });
      // Whether it leads right now (an election may have moved leadership since the plan).
      const bool leads = is_leader(h);
      const size_t log_before = read_file(h.conf() + "/etcd.log").size();
      auto r = upgrade("apply", h, target, {"--store", store});
      ASSERT_EQ(r.exit_code, 0) << r.output;
      auto j = json_of(r);
      EXPECT_EQ(j["to"], target);
      EXPECT_EQ(j["step"], "upgrade");
      ASSERT_FALSE(j["backup"].get<std::string>().empty()) << j.dump(2);
      if (i == 0) {
        first_backup = j["backup"];
        // The plan names the backup the next apply would reuse.
        auto replanned = json_of(upgrade("plan", hosts_[0], target, {"--store", store, "--max-backup-age", "1h"}));
        EXPECT_NE(replanned["backup"].get<std::string>().find("reuses backup " + first_backup), std::string::npos)
            << replanned.dump(2);
      }
      std::string checks = j["checks"].dump();
      if (leads) {
        EXPECT_NE(checks.find("leadership moved from " + name), std::string::npos) << checks;
        ++leaders_moved;
      }
      if (i < 2) {
        // A member still on the old minor holds the cluster version.
        EXPECT_EQ(cluster_version(hosts_[0]), from_minor + ".0");
        EXPECT_EQ(cluster_version(h), from_minor + ".0");
      }
      // The process init system runs the binary in the member's own install dir.
      EXPECT_EQ(binary_version(h.own_bin + "/etcd"), target);
      EXPECT_TRUE(path_exists(h.own_bin + "/etcd-releases/v" + version_of(from_minor) + "/etcd"))
          << "the old binaries are kept for the rollback";
      // etcd's corruption checks as the target names them, and taken up by it: what it logged since
      // the switch says it used each variable and ignored none.
      const EnvVars env = parse_env_file(read_file(h.conf() + "/etcd.env"));
      const std::string started = read_file(h.conf() + "/etcd.log").substr(log_before);
      EXPECT_EQ(started.find("unrecognized environment variable"), std::string::npos) << started.substr(0, 4000);
      for (const auto& [name, value] : corruption_check_env(target)) {
        EXPECT_EQ(env_value(env, name), value) << name;
        EXPECT_NE(started.find("\"recognized and used environment variable\",\"variable-name\":\"" + name + "\""), std::string::npos)
            << name << "\n" << started.substr(0, 4000);
      }
    }
    EXPECT_GE(leaders_moved, 1) << "the last member led when its turn came (plan order)";
    // Every member runs the target; the cluster version follows within etcd's version check
    // interval (the leader looks every few seconds).
    for (const auto& [id, s] : endpoint_status(hosts_[1])) EXPECT_EQ(s.version, target) << std::hex << id;
    auto deadline = Clock::now() + 60s;
    while (cluster_version(hosts_[2]) != to_minor + ".0" && Clock::now() < deadline) std::this_thread::sleep_for(500ms);
    EXPECT_EQ(cluster_version(hosts_[2]), to_minor + ".0");

    // Every member holds the same data: HashKV at one revision, asked of each (etcdctl).
    writer.pause(true);
    std::this_thread::sleep_for(1s);
    auto put = etcdctl_json(hosts_[0], {"put", "/registry/upgrade/marker", to_minor});
    int64_t rev = put["header"]["revision"];
    std::set<uint64_t> hashes;
    for (int attempt = 0; attempt < 20; ++attempt) {
      hashes.clear();
      auto hk = etcdctl_json(hosts_[0], {"endpoint", "hashkv", "--cluster", "--rev", std::to_string(rev)});
      for (const auto& e : hk) hashes.insert(e["HashKV"]["hash"].get<uint64_t>());
      if (hk.size() == 3 && hashes.size() == 1) break;
      std::this_thread::sleep_for(500ms);
    }
    EXPECT_EQ(hashes.size(), 1u) << "members differ at revision " << rev;
    writer.pause(false);

    // The backup taken before the step restores with the old version's own tool and starts on its etcd
    // with the data the cluster had at the backup's revision.
    expect_backup_restores_with(etcd_release(from_minor), store, first_backup, all);
  }
  writer.stop();
  // At most one leader election: etcd's election timeout is 1 s, randomised up to 2 s, plus the
  // client's failover to another endpoint (1 s command timeout). Measured: 62 ms, since leadership
  // is moved away before the leader restarts and a follower's restart costs a failover at most.
  EXPECT_GT(writer.writes(), 100);
  EXPECT_LT(writer.longest_outage(), 3000ms) << "longest time without a successful write; last error: "
                                             << writer.last_error();
  std::printf("[upgrade] %lld writes, longest time without a successful write: %lld ms\n",
              static_cast<long long>(writer.writes()), static_cast<long long>(writer.longest_outage().count()));
}


// etcd's own downgrade, end to end: 3.6 -> 3.5 (and 3.7 -> 3.6), every member through
// `etcdadm upgrade apply`, the first one enabling etcd's downgrade. Where etcd has no downgrade
// (3.5 -> 3.4), refused before anything is stopped.
TEST_F(Upgrade, DowngradeThroughEtcdsDowngradeApiOrRefusedBeforeAnythingStops) {
  const EtcdRelease& under = etcd_under_test();
  const std::string lower = pinned_minor_beside(under.minor, -1);
  if (lower.empty()) ETCDADM_SKIP_BY_DESIGN() << "no pinned minor below " << under.minor;
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  ASSERT_EQ(etcdctl(hosts_[0], {"put", "/registry/before-downgrade", "1"}).exit_code, 0);
  const std::string target = version_of(lower);
  auto planned = upgrade("plan", hosts_[0], target);
  auto plan = json_of(planned);
  if (!supports_downgrade_api(*EtcdVersion::parse(under.version))) {
    EXPECT_EQ(planned.exit_code, 2) << planned.output;
    EXPECT_FALSE(plan["allowed"].get<bool>()) << plan.dump(2);
    EXPECT_NE(plan["problems"].dump().find("from 3.6 on"), std::string::npos) << plan.dump(2);
    std::map<std::string, int> pids;
    for (const auto& h : hosts_) pids[h.name] = running_pid(h.conf() + "/etcd.pid", bin_of(h) + "/etcd");
    auto refused = upgrade("apply", hosts_[1], target, {"--store", dir_ / "store"});
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find("nothing was changed"), std::string::npos) << refused.output;
    EXPECT_NE(refused.output.find("init --from-backup"), std::string::npos) << "the supported path: " << refused.output;
    for (const auto& h : hosts_) {
      EXPECT_EQ(running_pid(h.conf() + "/etcd.pid", bin_of(h) + "/etcd"), pids[h.name]) << h.name << " was restarted";
      EXPECT_FALSE(path_exists(h.conf() + "/upgrade.json")) << h.name;
    }
    EXPECT_FALSE(path_exists(dir_ / "store")) << "no backup is taken for a refused change";
    for (const auto& [id, st] : endpoint_status(hosts_[0])) EXPECT_EQ(st.version, under.version);
    return;
  }
  ASSERT_EQ(planned.exit_code, 0) << planned.output;
  ASSERT_TRUE(plan["allowed"].get<bool>()) << plan.dump(2);
  for (const auto& m : plan["members"]) {
    EXPECT_EQ(m["step"], "downgrade");
    EXPECT_TRUE(m["enableDowngrade"].get<bool>());
  }
  EXPECT_TRUE(plan["members"][2]["leader"].get<bool>());
  for (size_t i = 0; i < 3; ++i) {
    const std::string name = plan["members"][i]["name"];
    const Host& h = *std::find_if(hosts_.begin(), hosts_.end(), [&](const Host& x) { return x.name == name; });
    if (i == 0) {
      // Killed right after enabling etcd's downgrade: the run again finds it enabled and goes on.
      RunOptions kill_at;
      kill_at.env["ETCDADM_FAILPOINTS"] = "upgrade/downgrade/enabled";
      auto killed = etcdadm({"upgrade", "apply", "--config-dir", h.conf(), "--version", target, "--release-url",
                             release_.base_url, "--cache-dir", dir_ / "cache", "--store", dir_ / "store"},
                            kill_at);
      ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.output;
    }
    auto r = upgrade("apply", h, target, {"--store", dir_ / "store"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto j = json_of(r);
    EXPECT_EQ(j["step"], "downgrade");
    std::string checks = j["checks"].dump();
    EXPECT_NE(checks.find("ready to downgrade"), std::string::npos) << checks;
    // etcd lowers the cluster version once the downgrade is enabled (the leader's next check).
    EXPECT_EQ(cluster_version(h), lower + ".0");
    EXPECT_EQ(binary_version(h.own_bin + "/etcd"), target);
  }
  for (const auto& [id, st] : endpoint_status(hosts_[0])) EXPECT_EQ(st.version, target) << std::hex << id;
  // The leader ends the downgrade once every member runs the target; etcd says so in its log
  // ("the cluster has been downgraded", 3.5's server.go and 3.6's version/monitor.go).
  auto deadline = Clock::now() + 60s;
  bool finished = false;
  while (!finished && Clock::now() < deadline) {
    for (const auto& h : hosts_) {
      if (path_exists(h.conf() + "/etcd.log") &&
          read_file(h.conf() + "/etcd.log").find("the cluster has been downgraded") != std::string::npos) {
        finished = true;
      }
    }
    if (!finished) std::this_thread::sleep_for(1s);
  }
  EXPECT_TRUE(finished) << "no member logged the end of the downgrade";
  auto again = json_of(upgrade("plan", hosts_[0], under.version));
  EXPECT_TRUE(again["allowed"].get<bool>()) << "an upgrade is possible again: " << again.dump(2);
  auto got = etcdctl(hosts_[2], {"get", "/registry/before-downgrade", "--print-value-only"});
  EXPECT_EQ(got.output, "1\n");
  auto hk = etcdctl_json(hosts_[0], {"endpoint", "hashkv", "--cluster"});
  std::set<uint64_t> hashes;
  for (const auto& e : hk) hashes.insert(e["HashKV"]["hash"].get<uint64_t>());
  EXPECT_EQ(hashes.size(), 1u) << hk.dump();
}

// etcdadm killed (SIGKILL) in each phase of `upgrade apply`, then run again or rolled back: the
// member ends up on the new version or the old one, healthy, and at no moment without a binary or
// its config. A rollback is possible while the cluster version has not moved, and refused after.
TEST_F(Upgrade, KilledInEachPhaseFinishesOrRollsBack) {
  const EtcdRelease& under = etcd_under_test();
  const std::string higher = pinned_minor_beside(under.minor, 1);
  if (higher.empty()) ETCDADM_SKIP_BY_DESIGN() << "no pinned minor above " << under.minor;
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  const std::string target = version_of(higher);

  // With a member down, no other may be restarted: refused before anything is backed up or stopped.
  int pid3 = running_pid(hosts_[2].conf() + "/etcd.pid", bin_of(hosts_[2]) + "/etcd");
  ASSERT_GT(pid3, 0);
  ::kill(pid3, SIGKILL);
  int pid1 = running_pid(hosts_[0].conf() + "/etcd.pid", bin_of(hosts_[0]) + "/etcd");
  auto refused = upgrade("apply", hosts_[0], target, {"--store", dir_ / "store"});
  EXPECT_EQ(refused.exit_code, 6) << refused.output;
  EXPECT_NE(refused.output.find("member m3 is not healthy"), std::string::npos) << refused.output;
  EXPECT_EQ(running_pid(hosts_[0].conf() + "/etcd.pid", bin_of(hosts_[0]) + "/etcd"), pid1) << "m1 was restarted";
  EXPECT_FALSE(path_exists(dir_ / "store"));
  EXPECT_FALSE(path_exists(hosts_[0].conf() + "/upgrade.json"));
  auto restarted = run_with_member_flags({"init", "phase", "start"}, hosts_[2]);
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
  auto wait_until = Clock::now() + 60s;
  while (Clock::now() < wait_until && etcdctl(hosts_[2], {"endpoint", "health"}).exit_code != 0) std::this_thread::sleep_for(500ms);

  // etcdadm's failpoints in upgrade apply (common/failpoint.h): the start of each phase, and the
  // moments inside them where a half-done step would hurt most.
  const std::vector<std::string> failpoints = {"upgrade/preflight/recorded", "upgrade/backup",
                                               "upgrade/install/kept",       "upgrade/leadership",
                                               "upgrade/switch/renamed",     "upgrade/switch/stopped",
                                               "upgrade/health"};
  for (size_t i = 0; i < failpoints.size(); ++i) {
    const std::string& point = failpoints[i];
    SCOPED_TRACE("killed at " + point);
    const Host& h = hosts_[i % 2];  // m3 stays on the old minor: the cluster version cannot move
    RunOptions kill_at;
    kill_at.env["ETCDADM_FAILPOINTS"] = point;
    auto killed = etcdadm({"upgrade", "apply", "--config-dir", h.conf(), "--version", target, "--release-url",
                           release_.base_url, "--cache-dir", dir_ / "cache", "--store", dir_ / "store"},
                          kill_at);
    ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.output;
    ASSERT_NE(killed.output.find("failpoint " + point), std::string::npos) << killed.output;
    // Never without a binary or config, whatever the moment.
    auto on_disk = binary_version(bin_of(h) + "/etcd");
    EXPECT_TRUE(on_disk == under.version || on_disk == target) << on_disk;
    EXPECT_TRUE(path_exists(h.conf() + "/etcd.env"));
    EXPECT_TRUE(path_exists(h.conf() + "/etcdadm.json"));

    // Even ones: run it again (finish), then roll back; odd ones: roll back straight away.
    if (i % 2 == 0) {
      auto again = upgrade("apply", h, target, {"--store", dir_ / "store"});
      ASSERT_EQ(again.exit_code, 0) << again.output;
      EXPECT_EQ(binary_version(bin_of(h) + "/etcd"), target);
      bool found = false;
      for (const auto& [id, st] : endpoint_status(hosts_[2])) found = found || st.version == target;
      EXPECT_TRUE(found) << "the member runs " << target;
      EXPECT_EQ(cluster_version(hosts_[2]), under.minor + ".0") << "m3 holds the cluster version";
    }
    auto back = upgrade("rollback", h, "");
    ASSERT_EQ(back.exit_code, 0) << back.output;
    EXPECT_EQ(binary_version(bin_of(h) + "/etcd"), under.version);
    for (const auto& [id, st] : endpoint_status(hosts_[2])) EXPECT_EQ(st.version, under.version) << std::hex << id;
    auto health = etcdctl_json(hosts_[2], {"endpoint", "health", "--cluster"});
    ASSERT_EQ(health.size(), 3u) << health.dump();
    for (const auto& e : health) EXPECT_TRUE(e["health"].get<bool>()) << e.dump();
  }

  // Once every member runs the new minor the cluster version moves, and a binary rollback is over.
  for (const auto& h : hosts_) {
    auto r = upgrade("apply", h, target, {"--store", dir_ / "store", "--max-backup-age", "1h"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  auto deadline = Clock::now() + 60s;
  while (cluster_version(hosts_[0]) != higher + ".0" && Clock::now() < deadline) std::this_thread::sleep_for(500ms);
  ASSERT_EQ(cluster_version(hosts_[0]), higher + ".0");
  auto late = upgrade("rollback", hosts_[0], "");
  EXPECT_EQ(late.exit_code, 2) << late.output;
  EXPECT_NE(late.output.find("nothing was changed"), std::string::npos) << late.output;
  EXPECT_EQ(binary_version(bin_of(hosts_[0]) + "/etcd"), target);
}

}  // namespace
}  // namespace etcdadm::test

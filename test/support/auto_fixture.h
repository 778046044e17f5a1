// The fixture of the `etcdadm auto` tests: hosts as processes, each with its own loopback address
// (127.0.0.11, .12, ...) and dirs, sharing a store (a local directory, or an object store given
// by store_flags_ and store_env_), creating and keeping a cluster of real etcd members; etcdctl
// (through the wrapper each member's etcdctl phase writes) and the store's records are the oracles.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "common/http_client.h"
#include "common/timefmt.h"
#include "common/subprocess.h"
#include "controller/records.h"
#include "store/backend/local/local_store.h"
#include "test/support/lifecycle_fixture.h"
#include "test/support/netns_lab.h"
#include "test/support/skips.h"

namespace etcdadm::test {

class AutoFixture : public LifecycleFixture {
 protected:
  void SetUp() override {
    LifecycleFixture::SetUp();
    store_ = dir_ / "store";
  }

  void TearDown() override {
    if (lab_) lab_->heal();  // a test that failed with a partition in place
    for (auto& [name, p] : autos_) p.stop(std::chrono::milliseconds(5000));
    LifecycleFixture::TearDown();
    lab_.reset();
  }

  // Puts every host in a network namespace of its own (NetnsLab), for real partitions: called
  // before anything starts. Needs root: outside CI the test is skipped without it (check
  // IsSkipped() after), under CI it fails.
  void put_hosts_in_namespaces() {
    if (const std::string why = NetnsLab::unavailable(); !why.empty()) ETCDADM_SKIP_OUTSIDE_CI() << why;
    lab_ = std::make_unique<NetnsLab>(static_cast<int>(hosts_.size()));
    for (size_t i = 0; i < hosts_.size(); ++i) {
      hosts_[i].netns = lab_->netns(static_cast<int>(i));
      hosts_[i].client_address = lab_->address(static_cast<int>(i));
    }
  }
  int index_of(const Host& h) const { return static_cast<int>(&h - hosts_.data()); }

  // Its own loopback address, or its address on a NetnsLab's link.
  std::string address(const Host& h) const {
    if (!h.netns.empty()) return h.client_address;
    return "127.0.0." + std::to_string(10 + (&h - hosts_.data()) + 1);
  }

  std::vector<std::string> auto_flags(const Host& h) const {
    auto flags = member_flags(h);
    auto it = std::find(flags.begin(), flags.end(), "--bind-address");
    *(it + 1) = address(h);
    return flags;
  }

  // The cluster CA made once, on the first host, and copied to the others (what an operator or
  // kops does before starting the controllers).
  void make_ca() {
    std::vector<std::string> args = {"init", "phase", "certificates"};
    auto f = auto_flags(hosts_[0]);
    args.insert(args.end(), f.begin(), f.end());
    auto r = etcdadm(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (size_t i = 1; i < hosts_.size(); ++i) copy_ca(hosts_[0], hosts_[i]);
  }

  void seed(int members, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"seed", "--members", std::to_string(members), "--version", release_.version,
                                     "--certs-dir", hosts_[0].certs()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = with_store(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  // etcdadm `args` with the store's flags and environment.
  ProcessResult with_store(std::vector<std::string> args) {
    args.insert(args.end(), {"--store", store_});
    args.insert(args.end(), store_flags_.begin(), store_flags_.end());
    RunOptions ro;
    ro.env = store_env_;
    return etcdadm(args, ro);
  }

  // Scheduled backups are off unless a test turns them on (`backups`: the sidecar's flags): the
  // restores below must know which backup is the latest.
  std::vector<std::string> backups_ = {"--no-backups"};
  std::vector<std::string> member_extra_;  // more member flags of every `auto` (e.g. --quota-backend-bytes)
  std::string idle_interval_ = "3s";      // how long a settled controller goes without reading the store
  std::map<std::string, int> metrics_port_;
  // The value of the gauge `name` on host `h`'s /metrics ("" when it does not answer).
  std::string gauge(const Host& h, const std::string& name) {
    try {
      auto r = http("GET", "http://127.0.0.1:" + std::to_string(metrics_port_.at(h.name)) + "/metrics");
      const auto at = r.body.find("\n" + name + " ");
      if (!r.ok() || at == std::string::npos) return "";
      const auto start = at + name.size() + 2;
      return r.body.substr(start, r.body.find('\n', start) - start);
    } catch (const Error&) {
      return "";
    }
  }

  // `as` names the process (autos_) and its log when it is not the host's name: a second process
  // under a host's name.
  void start_auto(const Host& h, const std::map<std::string, std::string>& env = {}, std::string as = "") {
    if (as.empty()) as = h.name;
    std::vector<std::string> argv;
    if (!h.netns.empty()) argv = {"ip", "netns", "exec", h.netns};  // execs: the PID stays the controller's
    argv.insert(argv.end(), {ETCDADM_BIN, "auto", "--store", store_, "--interval", "1s", "--idle-interval", idle_interval_, "--heartbeat", "5s"});
    argv.insert(argv.end(), store_flags_.begin(), store_flags_.end());
    argv.insert(argv.end(), backups_.begin(), backups_.end());
    if (backups_.front() != "--no-backups") {  // the sidecar's HTTP: /metrics
      if (!metrics_port_.count(h.name)) metrics_port_[h.name] = free_port();
      argv.insert(argv.end(), {"--listen", "127.0.0.1:" + std::to_string(metrics_port_[h.name])});
    }
    auto f = auto_flags(h);
    argv.insert(argv.end(), f.begin(), f.end());
    argv.insert(argv.end(), member_extra_.begin(), member_extra_.end());
    RunOptions ro;
    ro.env = store_env_;
    ro.env["ETCDADM_CATALOG"] = dir_ / ("catalog-" + as + ".db");
    for (const auto& [k, v] : env) ro.env[k] = v;
    autos_[as] = ChildProcess::start(argv, dir_ / ("auto-" + as + ".log"), ro);
  }
  std::string log_of(const Host& h) const { return dir_ / ("auto-" + h.name + ".log"); }
  std::string logs() const {
    std::string out;
    for (const auto& h : hosts_) {
      if (path_exists(log_of(h))) out += "---- " + h.name + "\n" + read_file(log_of(h));
    }
    return out;
  }

  // The hosts' records and the newest 500 events: read from a local store directly, from an
  // object store through `etcdadm auto status` (with the store's flags and environment).
  std::vector<HostRecord> host_records() {
    if (!local_store()) {
      std::vector<HostRecord> out;
      for (const auto& h : auto_status().value("hosts", nlohmann::json::array())) {
        HostRecord r;
        r.name = h["name"];
        r.data = parse_data_state(h["data"].get<std::string>()).value_or(DataState::kEmpty);
        r.member_id = h["memberID"];
        r.etcd_running = h["etcdRunning"];
        if (h.contains("heartbeat") && h["heartbeat"].is_string()) {
          if (auto t = parse_rfc3339(h["heartbeat"].get<std::string>())) r.heartbeat_unix = std::chrono::system_clock::to_time_t(*t);
        }
        out.push_back(r);
      }
      return out;
    }
    LocalStore s(store_);
    if (!path_exists(store_)) return {};
    return read_host_records(s, nullptr);
  }

  std::vector<AutoEvent> events() {
    if (!local_store()) {
      std::vector<AutoEvent> out;
      for (const auto& e : auto_status().value("events", nlohmann::json::array())) {
        out.push_back(AutoEvent{0, e["host"], e["action"], e["reason"], e["command"], e["outcome"]});
      }
      return out;
    }
    LocalStore s(store_);
    return read_auto_events(s, 500);
  }

  bool local_store() const { return store_.find("://") == std::string::npos; }

  // The events of `action` that were carried out (outcome "done..."), oldest first.
  std::vector<AutoEvent> done(const std::string& action) {
    std::vector<AutoEvent> out;
    for (const auto& e : events()) {
      if (e.action == action && e.outcome.rfind("done", 0) == 0) out.push_back(e);
    }
    return out;
  }

  nlohmann::json auto_status() {
    auto r = with_store({"auto", "status", "--events", "500", "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    if (r.exit_code != 0) return nlohmann::json::object();
    return nlohmann::json::parse(r.output.substr(r.output.find('{')));
  }

  // Until `check` holds (polling every 250 ms), or fails the test with every host's log.
  bool eventually(std::chrono::seconds timeout, const std::function<bool()>& check, const std::string& what) {
    if (holds_within(timeout, check)) return true;
    ADD_FAILURE() << what << " did not happen within " << timeout.count() << " s\n" << logs();
    return false;
  }

  // The versions the three members run (etcdctl endpoint status --cluster through m1); {"?"} when
  // it does not answer for three.
  std::set<std::string> versions_running() {
    std::set<std::string> out;
    auto r = etcdctl(hosts_[0], {"endpoint", "status", "--cluster", "-w", "json"});
    if (r.exit_code != 0) return {"?"};
    auto j = nlohmann::json::parse(r.output.substr(r.output.find('[')), nullptr, false);
    if (!j.is_array() || j.size() != 3) return {"?"};
    for (const auto& e : j) out.insert(e["Status"]["version"].get<std::string>());
    return out;
  }

  // Every host's member started, answering, in one cluster of `count` started members.
  bool one_healthy_cluster(size_t count) {
    std::set<std::string> cluster_ids;
    for (size_t i = 0; i < count; ++i) {
      const Host& h = hosts_[i];
      if (!path_exists(h.etcdctl_wrapper())) return false;
      auto r = etcdctl(h, {"endpoint", "status", "-w", "json"});
      if (r.exit_code != 0) return false;
      auto j = etcdctl_answer(r.output);
      if (j.value("Status", nlohmann::json::object()).value("leader", uint64_t{0}) == 0) return false;
      cluster_ids.insert(std::to_string(j["Status"]["header"]["cluster_id"].get<uint64_t>()));
      auto list = etcdctl(h, {"member", "list", "-w", "json"});
      if (list.exit_code != 0) return false;
      auto members = etcdctl_answer(list.output).value("members", nlohmann::json::array());
      if (members.size() != count) return false;
      for (const auto& m : members) {
        if (!m.contains("name") || m["name"].get<std::string>().empty()) return false;  // one not started yet
      }
    }
    return cluster_ids.size() == 1;
  }

  std::string keys_of(const Host& h) { return etcdctl(h, {"get", "/", "--prefix", "--keys-only"}).output; }

  // Hosts lost for good: their controllers and etcd stopped at once, their data disks replaced by
  // empty ones.
  void lose_for_good(std::initializer_list<Host*> lost) {
    for (Host* h : lost) {
      autos_[h->name].stop(std::chrono::milliseconds(0));
      stop_pid_file(h->conf() + "/etcd.pid", bin() + "/etcd", std::chrono::milliseconds(0));
      remove_all(h->data());
      make_dirs(h->data(), 0700);
    }
  }
  // Whether host `h`'s record waits for something that says `what`.
  bool waits_for(const Host& h, const std::string& what) {
    for (const auto& r : host_records()) {
      if (r.name == h.name && r.waiting_for.find(what) != std::string::npos) return true;
    }
    return false;
  }

  // Puts `key` through the first host and waits until every host has applied it (a follower does
  // a moment after the leader answered): then their HashKV at the newest revision compare.
  void put_applied_everywhere(const std::vector<const Host*>& hosts, const std::string& key) {
    ASSERT_EQ(etcdctl(*hosts[0], {"put", key, "x"}).exit_code, 0);
    const int64_t written = revision_of(*hosts[0]);
    for (const auto* h : hosts) {
      ASSERT_TRUE(eventually(std::chrono::seconds(10), [&] { return revision_of(*h) >= written; }, h->name + " applying the write"));
    }
  }

  // A restore of a Kubernetes keyspace (/registry/) with the plan's bump: every member serves the
  // backup's keys at the backup's revision + 10^9 and, once one more write is in (etcd 3.4 answers
  // no HashKV at a compaction's revision), the same HashKV as the others.
  void expect_restored_with_bump(const std::vector<const Host*>& hosts, int64_t backup_revision, const std::string& backup_keys) {
    for (const auto* h : hosts) EXPECT_EQ(revision_of(*h), backup_revision + 1000000000) << h->name;
    EXPECT_EQ(keys_of(*hosts[0]), backup_keys);
    ASSERT_NO_FATAL_FAILURE(put_applied_everywhere(hosts, "/registry/written-after-the-restore"));
    auto hashes = hash_kv(hosts);
    for (const auto& [name, hash] : hashes) EXPECT_EQ(hash, hashes.begin()->second) << name;
  }

  void bootstrap_three(std::vector<std::string> seed_flags = {}) {
    ASSERT_NO_FATAL_FAILURE(make_ca());
    ASSERT_NO_FATAL_FAILURE(seed(3, seed_flags));
    std::random_device rd;
    const unsigned seed = rd();
    std::mt19937 rng(seed);
    std::vector<size_t> order = {0, 1, 2};
    std::shuffle(order.begin(), order.end(), rng);
    std::string described;
    for (size_t i : order) {
      start_auto(hosts_[i]);
      const auto delay = std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 1500)(rng));
      described += hosts_[i].name + " then " + std::to_string(delay.count()) + " ms; ";
      std::this_thread::sleep_for(delay);
    }
    SCOPED_TRACE("start order (seed " + std::to_string(seed) + "): " + described);
    const auto last_registered = std::chrono::steady_clock::now();
    ASSERT_TRUE(eventually(std::chrono::seconds(90), [&] { return one_healthy_cluster(3); }, "one healthy cluster of three"));
    // Each host records its create-member after the step, and its member may answer before: a
    // test that counts the events from here must not count those (CI at 2aaa774: "create-member
    // by m3" after AFrozenMinorityHost... took its count).
    ASSERT_TRUE(eventually(std::chrono::seconds(20), [&] { return done("create-member").size() >= 3; },
                           "every host's create-member event"));
    std::cout << "bootstrap: one cluster of three "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - last_registered).count()
              << " ms after the last host started\n";
  }

  std::string store_;  // a local directory, or an object store's URL
  std::vector<std::string> store_flags_;  // after --store: an object store's endpoint flags
  std::map<std::string, std::string> store_env_;  // its credentials
  std::map<std::string, ChildProcess> autos_;
  std::unique_ptr<NetnsLab> lab_;  // put_hosts_in_namespaces
};

}  // namespace etcdadm::test

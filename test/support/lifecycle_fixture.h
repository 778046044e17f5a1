// The fixture of the member lifecycle tests (init, join, reset, upgrade): three hosts on loopback,
// each with its own dirs and ports, the etcdadm binary, the release of the etcd under test packed
// as an etcd release tarball behind a file:// release URL, every member with TLS and
// client-certificate auth through the `process` init system, and etcdctl (through the wrapper
// etcdadm writes) as the oracle.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/subprocess.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcdadm/init_system.h"
#include "test/support/etcd_versions.h"
#include "test/support/release_fixture.h"
#include "test/support/test_env.h"

namespace etcdadm::test {

struct Host {
  std::string name;
  std::string root;  // this host's dirs live under it
  int client_port = 0;
  int peer_port = 0;
  std::string certs() const { return root + "/pki"; }
  std::string data() const { return root + "/data"; }
  std::string conf() const { return root + "/conf"; }
  // Where the test reaches the member: its loopback, or its address on a NetnsLab's link.
  std::string client_address = "127.0.0.1";
  std::string client_url() const { return "https://" + client_address + ":" + std::to_string(client_port); }
  // The network namespace its processes run in (NetnsLab); empty: the test's own.
  std::string netns;
  std::string etcdctl_wrapper() const { return conf() + "/etcdctl.sh"; }
  std::string own_bin;  // its own install dir (upgrades); empty: the fixture's shared one
};

// etcdctl's -w json answer among what it printed: a client warning may come first as a JSON log
// line of its own (the member it asked was just stopped).
inline nlohmann::json etcdctl_answer(const std::string& output) {
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(start, end - start);
    start = end + 1;
    if (line.empty() || (line[0] != '{' && line[0] != '[')) continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || (j.is_object() && j.contains("level"))) continue;
    return j.is_array() ? j[0] : j;
  }
  return nlohmann::json::object();
}

class LifecycleFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    release_ = make_local_release(dir_ / "releases");
    for (int i = 1; i <= 3; ++i) {
      Host h;
      h.name = "m" + std::to_string(i);
      h.root = dir_ / h.name;
      h.client_port = free_port();
      h.peer_port = free_port();
      hosts_.push_back(h);
    }
  }

  // Every etcd an etcdadm command started is stopped by its pid file, whatever the test did.
  void TearDown() override {
    for (const auto& h : hosts_)
      stop_pid_file(h.conf() + "/etcd.pid", bin_of(h) + "/etcd", std::chrono::milliseconds(3000));
  }

  // --key-algorithm of init and join (empty: not passed). ECDSA, whose keys take microseconds: the
  // 13 RSA keys of an init and two joins were 77 % of a cluster test's CPU (perf), and the lifecycle
  // suites ran four at a time on two cores. Lifecycle.InitAndTwoJoins... clears it to test the
  // default (RSA 2048) end to end.
  std::string key_algorithm_ = "ecdsa-p256";

  std::string bin() const { return dir_ / "bin"; }
  std::string bin_of(const Host& h) const { return h.own_bin.empty() ? bin() : h.own_bin; }

  std::vector<std::string> member_flags(const Host& h, const std::string& init_system = "process") const {
    std::vector<std::string> flags = {"--name",         h.name,
                                      "--version",      release_.version,
                                      "--release-url",  release_.base_url,
                                      "--cache-dir",    dir_ / "cache",
                                      "--install-dir",  bin_of(h),
                                      "--certs-dir",    h.certs(),
                                      "--data-dir",     h.data(),
                                      "--config-dir",   h.conf(),
                                      "--bind-address", "127.0.0.1",
                                      "--client-port",  std::to_string(h.client_port),
                                      "--peer-port",    std::to_string(h.peer_port),
                                      "--init-system",  init_system};
    if (!key_algorithm_.empty()) flags.insert(flags.end(), {"--key-algorithm", key_algorithm_});
    return flags;
  }

  // The key algorithm of every certificate in a host's certs dir (check-expiration -o json).
  std::set<std::string> key_algorithms(const Host& h) {
    auto r = etcdadm({"certs", "check-expiration", "--certs-dir", h.certs(), "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::set<std::string> out;
    for (const auto& c : nlohmann::json::parse(r.output)) out.insert(c["keyAlgorithm"].get<std::string>());
    return out;
  }

  ProcessResult etcdadm(std::vector<std::string> args, const RunOptions& extra = {}) {
    return run_etcdadm(args, dir_ / "catalog.db", extra);
  }

  ProcessResult run_with_member_flags(std::vector<std::string> args, const Host& h,
                                      std::vector<std::string> extra = {}) {
    auto f = member_flags(h);
    args.insert(args.end(), f.begin(), f.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return etcdadm(args);
  }

  void init(const Host& h, std::vector<std::string> extra = {}) {
    auto r = run_with_member_flags({"init"}, h, extra);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  // The members' KV hashes at one revision, by host: equal when they hold the same data.
  std::map<std::string, uint64_t> hash_kv(const std::vector<const Host*>& hosts) {
    auto st = etcdctl(*hosts[0], {"endpoint", "status", "-w", "json"});
    auto j = etcdctl_answer(st.output);
    const int64_t rev = j["Status"]["header"]["revision"].get<int64_t>();
    std::map<std::string, uint64_t> out;
    for (const auto* h : hosts) {
      auto r = etcdctl(*h, {"endpoint", "hashkv", "--rev", std::to_string(rev), "-w", "json"});
      EXPECT_EQ(r.exit_code, 0) << r.output;
      auto hj = etcdctl_answer(r.output);
      out[h->name] = hj["HashKV"]["hash"].get<uint64_t>();
    }
    return out;
  }

  int64_t revision_of(const Host& h) {
    auto st = etcdctl(h, {"endpoint", "status", "-w", "json"});
    return etcdctl_answer(st.output)["Status"]["header"]["revision"].get<int64_t>();
  }
  // Each key under `prefix` (a prefix ending in '/') with the revision that last wrote it, as
  // `client`'s cluster serves them: what acknowledged writes are checked against.
  static std::map<std::string, int64_t> mod_revisions(EtcdClient& client, const std::string& prefix) {
    etcdserverpb::RangeRequest range;
    range.set_key(prefix);
    std::string end = prefix;
    end.back() = static_cast<char>(end.back() + 1);
    range.set_range_end(end);
    std::map<std::string, int64_t> out;
    const auto response = client.range(range);  // kept: kvs() refers into it
    for (const auto& kv : response.kvs()) out[kv.key()] = kv.mod_revision();
    return out;
  }

  void copy_ca(const Host& from, const Host& to) {
    make_dirs(to.certs(), 0700);
    for (const char* f : {"/ca.crt", "/ca.key"}) {
      write_file_atomic(to.certs() + f, read_file(from.certs() + f), 0600, /*overwrite=*/true);
    }
  }

  void join(const Host& h, const Host& via, std::vector<std::string> extra = {}) {
    copy_ca(via, h);
    auto r = run_with_member_flags({"join", via.client_url()}, h, extra);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  // One more host, named after its place (m4, m5, ...), with the first host's CA.
  void add_host() {
    Host h;
    h.name = "m" + std::to_string(hosts_.size() + 1);
    h.root = dir_ / h.name;
    h.client_port = free_port();
    h.peer_port = free_port();
    hosts_.push_back(h);
    copy_ca(hosts_[0], hosts_.back());
  }

  // `extra`: more member flags for every member.
  void three_member_cluster(const std::vector<std::string>& extra = {}) {
    ASSERT_NO_FATAL_FAILURE(init(hosts_[0], extra));
    ASSERT_NO_FATAL_FAILURE(join(hosts_[1], hosts_[0], extra));
    ASSERT_NO_FATAL_FAILURE(join(hosts_[2], hosts_[0], extra));
  }

  ProcessResult reset(const Host& h, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"reset", "--config-dir", h.conf()};
    args.insert(args.end(), extra.begin(), extra.end());
    return etcdadm(args);
  }

  // Every member lost at once: etcd killed, each host reset as after a disk loss (its CA kept).
  void lose_every_member() {
    for (const auto& h : hosts_) {
      stop_pid_file(h.conf() + "/etcd.pid", bin_of(h) + "/etcd", std::chrono::milliseconds(100));
      auto r = reset(h, {"--skip-remove-member", "--force"});
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
  }

  // --initial-cluster naming every host's peer URL.
  std::string initial_cluster_of_all() const {
    std::string out;
    for (const auto& h : hosts_) {
      out += (out.empty() ? "" : ",") + h.name + "=https://127.0.0.1:" + std::to_string(h.peer_port);
    }
    return out;
  }

  // `init` on the hosts `which` at once, each with its own extra flags (a restore of a whole
  // cluster: each init returns once its member serves, with a majority up).
  std::vector<ProcessResult> init_together(const std::vector<size_t>& which,
                                           const std::vector<std::vector<std::string>>& flags) {
    std::vector<ProcessResult> results(which.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < which.size(); ++i) {
      threads.emplace_back([&, i] { results[i] = run_with_member_flags({"init"}, hosts_[which[i]], flags[i]); });
    }
    for (auto& t : threads) t.join();
    return results;
  }

  // etcdctl through the wrapper etcdadm wrote (its env file carries endpoint and client cert).
  ProcessResult etcdctl(const Host& h, std::vector<std::string> args) {
    args.insert(args.begin(), h.etcdctl_wrapper());
    // The wrapper asks the member's loopback address: from inside its host's namespace.
    if (!h.netns.empty()) args.insert(args.begin(), {"ip", "netns", "exec", h.netns});
    RunOptions o;
    o.timeout = std::chrono::seconds(30);
    for (const char* v : {"ETCDCTL_ENDPOINTS", "ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY", "ETCDCTL_USER"}) {
      o.unset_env.push_back(v);
    }
    return run_process(args, o);
  }

  nlohmann::json etcdctl_json(const Host& h, std::vector<std::string> args) {
    args.push_back("-w");
    args.push_back("json");
    auto r = etcdctl(h, args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output.substr(r.output.find_first_of("[{")));
  }

  // The JSON document in a command's output (its log lines, interleaved, start with "[<time>]").
  nlohmann::json json_of(const ProcessResult& r) {
    for (size_t at = 0; at < r.output.size(); at = r.output.find('\n', at) + 1) {
      char c = r.output[at];
      if (c == '{' || (c == '[' && at + 1 < r.output.size() && (r.output[at + 1] == '\n' || r.output[at + 1] == ']'))) {
        // One value, whatever follows it (an error message after a refused plan's JSON).
        std::istringstream in(r.output.substr(at));
        nlohmann::json j;
        try {
          in >> j;
          return j;
        } catch (const nlohmann::json::exception&) {
        }
      }
      if (r.output.find('\n', at) == std::string::npos) break;
    }
    ADD_FAILURE() << "no JSON in: " << r.output;
    return nlohmann::json::object();
  }

  // `mib` MiB written in 1 MiB values, deleted, and compacted away: that much of every member's db
  // file is free pages afterwards.
  void fragment(int mib) {
    EtcdClient client(connection({&hosts_[0], &hosts_[1], &hosts_[2]}));
    const std::string value(1 << 20, 'x');
    for (int i = 0; i < mib; ++i) client.put("/fragment/" + std::to_string(i), value);
    etcdserverpb::DeleteRangeRequest del;
    del.set_key("/fragment/");
    del.set_range_end("/fragment0");
    client.delete_range(del);
    auto rev = client.put("/fragment-done", "1").header().revision();
    client.compact(rev, /*physical=*/true);
    // A member counts the compacted pages as free once its backend has committed again (within
    // its batch interval, 100 ms), and bbolt releases them over a few commits (pages a read
    // transaction still sees wait for it): until three quarters are counted, it is not done.
    for (const auto& h : hosts_) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
      for (;;) {
        auto st = client.status(h.client_url());
        if (st.dbsize() - st.dbsizeinuse() >= (int64_t(mib) << 20) * 3 / 4) break;
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << h.name << " never counted its compacted pages as free";
        client.put("/fragment-done", "1");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }

  // Puts 64 KiB values under `key_of(i)` until etcd refuses with NOSPACE; returns how many it took.
  // Small values fill the file evenly: bbolt reuses their freed pages, so the file holds little free
  // space when the alarm comes (1 MiB values leave runs too short to reuse: 8 MiB of 24 were free).
  static int fill_until_nospace(EtcdClient& client, const std::function<std::string(int)>& key_of) {
    const std::string value(64 << 10, 'y');
    for (int i = 0; i < 5000; ++i) {
      try {
        client.put(key_of(i), value);
      } catch (const Error& e) {
        EXPECT_TRUE(e.mentions("space")) << e.what();
        return i;
      }
    }
    ADD_FAILURE() << "etcd never raised NOSPACE";
    return 0;
  }

  nlohmann::json member_list(const Host& h) { return etcdctl_json(h, {"member", "list"})["members"]; }

  ConnectionConfig connection(const std::vector<const Host*>& hosts) const {
    ConnectionConfig c;
    c.endpoints.clear();
    for (const auto* h : hosts) c.endpoints.push_back(h->client_url());
    const Host& any = *hosts.front();
    c.cacert = any.certs() + "/ca.crt";
    c.cert = any.certs() + "/etcdctl-etcd-client.crt";
    c.key = any.certs() + "/etcdctl-etcd-client.key";
    return c;
  }

  // The backup `name` in `store`, restored with `old`'s own restore tool and started on `old`'s
  // etcd, holds what the live cluster (through `live`) held at the backup's revision (HashKV):
  // a backup taken before a version change brings the cluster back as it was, on the old version.
  void expect_backup_restores_with(const EtcdRelease& old, const std::string& store, const std::string& name,
                                   const std::vector<const Host*>& live) {
    SCOPED_TRACE("backup " + name + " restored with etcd " + old.version + "'s own tools");
    const std::string work = dir_ / ("restored-" + name);
    make_dirs(work);
    const std::string snap = work + "/snapshot.db";
    auto fetched = etcdadm({"backup", "restore", name, "--store", store, "--output", snap});
    ASSERT_EQ(fetched.exit_code, 0) << fetched.output;
    auto listed = etcdadm({"backup", "list", "--store", store, "-o", "json"});
    ASSERT_EQ(listed.exit_code, 0) << listed.output;
    int64_t backup_rev = 0;
    for (const auto& b : nlohmann::json::parse(listed.output.substr(listed.output.find('[')))) {
      if (b["backup"] == name) backup_rev = b["revision"];
    }
    ASSERT_GT(backup_rev, 0) << listed.output;
    const int peer_port = free_port();
    const std::string restored_dir = work + "/data";
    auto restored = snapshot_restore_with_tool(
        snap,
        {"--name", "r", "--initial-cluster", "r=http://127.0.0.1:" + std::to_string(peer_port),
         "--initial-advertise-peer-urls", "http://127.0.0.1:" + std::to_string(peer_port), "--data-dir", restored_dir},
        old);
    ASSERT_EQ(restored.exit_code, 0) << restored.output;
    EtcdOptions eo;
    eo.name = "r";
    eo.data_dir = restored_dir;
    eo.peer_port = peer_port;
    eo.etcd_binary = old.etcd();
    make_dirs(work + "/member");
    EtcdMember old_member(work + "/member", eo);
    old_member.start();
    EtcdClient restored_client(old_member.connection());
    EtcdClient cluster(connection(live));
    EXPECT_EQ(restored_client.status(old_member.client_url()).version(), old.version);
    EXPECT_EQ(restored_client.hash_kv(old_member.client_url(), backup_rev).hash(),
              cluster.hash_kv(live.front()->client_url(), backup_rev).hash())
        << "the backup holds the cluster's data at revision " << backup_rev;
    old_member.stop();
  }

  nlohmann::json info(const Host& h) {
    auto r = etcdadm({"info", "--config-dir", h.conf(), "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output.substr(r.output.find('{')));
  }

  TempDir dir_;
  LocalRelease release_;
  std::vector<Host> hosts_;
};

}  // namespace etcdadm::test

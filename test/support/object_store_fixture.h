// Shared pieces of the object-store end-to-end tests (test/e2e/*_store_test.cc): the servers,
// started once per test binary by object_store_main.cc, and a CLI fixture that runs the local
// store's whole flow on any backend.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "common/timefmt.h"
#include "store/blob_store.h"
#include "store/etcd_manager.h"
#include "store/layout.h"
#include "test/support/blob_store_contract.h"
#include "test/support/cli_fixture.h"
#include "test/support/fault_proxy.h"
#include "test/support/object_servers.h"

namespace etcdadm::test {

// The object-store servers of this test process (e2e/object_store_main.cc), each started on the
// first call (one ctest entry runs one backend's tests, so it starts only the servers they use) and
// stopped when the tests end. Every test uses its own bucket.
SwiftS3Server* swift_server();
GcsEmulator* gcs_emulator();
FakeGcsServer* fake_gcs_server();
MinioServer* minio_server();
AzuriteServer* azurite_server();

// The port of an http://host:port endpoint (to put a FaultProxy in front of it).
inline int port_of(const std::string& endpoint) { return std::stoi(endpoint.substr(endpoint.rfind(':') + 1)); }

// /usr/bin/aws against one of the S3 servers, path-style, with nothing from the machine's AWS setup.
class AwsCli {
 public:
  AwsCli(const std::string& dir, std::string endpoint, std::map<std::string, std::string> env)
      : config_(dir + "/aws-config"), endpoint_(std::move(endpoint)), env_(std::move(env)) {
    write_file_atomic(config_, "[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n");
  }
  ProcessResult run(std::vector<std::string> args) const {
    std::vector<std::string> argv = {"/usr/bin/aws", "--endpoint-url", endpoint_};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    for (const auto& v : cloud_env_vars()) o.unset_env.push_back(v);
    o.env = env_;
    o.env["AWS_CONFIG_FILE"] = config_;
    o.env["AWS_PAGER"] = "";
    o.timeout = std::chrono::seconds(120);
    return run_process(argv, o);
  }

 private:
  std::string config_, endpoint_;
  std::map<std::string, std::string> env_;
};

inline std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

inline std::string read_all(BlobReader& r) {
  std::string out;
  std::vector<uint8_t> buf(1 << 16);
  for (;;) {
    size_t n = r.read(buf.data(), buf.size());
    if (n == 0) return out;
    out.append(reinterpret_cast<const char*>(buf.data()), n);
  }
}

// What the end-to-end flow needs from a store backend under test: its flags and environment.
class ObjectStoreCliTest : public CliTest {
 protected:
  virtual std::vector<std::string> store_flags(const std::string& prefix = "backups") const = 0;
  virtual RunOptions store_env() const = 0;

  std::vector<std::string> with_store(std::vector<std::string> args, const std::string& prefix = "backups") const {
    for (auto& f : store_flags(prefix)) args.push_back(f);
    return args;
  }

  // The local store's whole flow, unchanged, on this backend: save -> list -> verify -> restore ->
  // start etcd on the restored dir: same keys and HashKV at the backup revision.
  void save_list_verify_restore() {
    auto& m = start_member();
    EtcdClient client(m.connection());
    load_keys(client, "/registry/pods/", 300, 700);
    save_list_verify_restore(m);
  }

  // What each command of a backup's round trip costs through `proxy`, a counting pass-through in
  // front of the server that `env` points the commands at: HTTP requests and TCP connections (over
  // TLS, each connection is one handshake). The save writes about 6.5 MiB that do not compress, so
  // with the smallest part size, 5 MiB, it uploads in parts, two at a time.
  struct CommandTraffic {
    std::string command;
    size_t requests = 0;
    int connections = 0;
  };
  std::vector<CommandTraffic> round_trip_traffic(FaultProxy& proxy, const RunOptions& env) {
    auto& m = start_member();
    EtcdClient client(m.connection());
    load_keys(client, "/registry/secrets/", 6000, 1000, 13);
    std::vector<CommandTraffic> out;
    auto measure = [&](const std::string& command, const std::vector<std::string>& args) {
      proxy.clear_requests();
      int before = proxy.connections();
      auto r = cli(with_store(args), env);
      EXPECT_EQ(r.exit_code, 0) << command << ": " << r.output;
      out.push_back({command, proxy.requests().size(), proxy.connections() - before});
    };
    measure("save", {"backup", "save", "--endpoints", m.client_url(), "--compression", "none", "--upload-concurrency", "2"});
    measure("list", {"backup", "list"});
    measure("verify", {"backup", "verify", "latest"});
    measure("restore", {"backup", "restore", "latest", "--output-file", dir_ / "traffic.db"});
    for (const auto& t : out) std::cout << t.command << ": " << t.requests << " requests on " << t.connections << " connections\n";
    return out;
  }

  // An age identity made by Debian's age-keygen in the test dir: the flags that make a save encrypt
  // to it, and those that let a reader open what it wrote.
  struct AgeFlags {
    std::vector<std::string> save, read;
    std::string recipient, identity_file;
  };
  AgeFlags age_flags() {
    AgeFlags f;
    f.identity_file = dir_ / "age-key.txt";
    auto gen = run_process({"age-keygen", "-o", f.identity_file});
    EXPECT_EQ(gen.exit_code, 0) << gen.output;
    auto pub = run_process({"age-keygen", "-y", f.identity_file});
    f.recipient = pub.output.substr(0, pub.output.find('\n'));
    f.save = {"--encrypt-to", f.recipient};
    f.read = {"--identity", f.identity_file};
    return f;
  }

  // The flow on an encrypted store, for a member loaded with `count` keys of `value_size` bytes
  // under `prefix`: the identity it used and the one backup as `backup list -o json` shows it.
  std::pair<AgeFlags, nlohmann::json> encrypted_save_list_verify_restore(const std::string& prefix, int count,
                                                                        size_t value_size) {
    auto& m = start_member();
    EtcdClient client(m.connection());
    load_keys(client, prefix, count, value_size);
    AgeFlags age = age_flags();
    save_list_verify_restore(m, age.save, age.read);
    auto listed = cli_json(with_store({"backup", "list", "-o", "json"}), store_env());
    EXPECT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0]["encryptedTo"], nlohmann::json::array({age.recipient}));
    EXPECT_EQ(listed[0]["dataFile"], "etcd.backup.gz.age");
    return {age, listed[0]};
  }

  // The same flow for a member the test has loaded with data of its own. `save_extra` and
  // `read_extra` go to the save and to the commands that read the backup (encryption flags).
  void save_list_verify_restore(EtcdMember& m, const std::vector<std::string>& save_extra = {},
                                const std::vector<std::string>& read_extra = {}) {
    EtcdClient client(m.connection());
    auto plus = [](std::vector<std::string> args, const std::vector<std::string>& extra) {
      args.insert(args.end(), extra.begin(), extra.end());
      return args;
    };
    auto saved = cli_json(
        with_store(plus({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url(), "-o", "json"}, save_extra)),
        store_env());
    std::string name = saved["backup"];
    int64_t revision = saved["revision"];
    load_keys(client, "/registry/later/", 10, 10);

    auto listed = cli_json(with_store({"backup", "list", "-o", "json"}), store_env());
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0]["backup"], name);
    auto v = cli(with_store(plus({"backup", "verify", name}, read_extra)), store_env());
    EXPECT_EQ(v.exit_code, 0) << v.output;

    EtcdOptions ro;
    ro.name = "r1";
    ro.peer_port = free_port();
    ro.data_dir = dir_ / "r1-data";
    ro.initial_cluster_token = "etcd-cluster";
    auto rr = cli(with_store(plus({"backup", "restore", "latest", "--data-dir", ro.data_dir, "--name", "r1",
                                   "--initial-advertise-peer-urls", "http://127.0.0.1:" + std::to_string(ro.peer_port),
                                   "--keep-revision"},  // compared at the backup's revision
                                  read_extra)),
                  store_env());
    ASSERT_EQ(rr.exit_code, 0) << rr.output;
    auto& restored = start_member(ro);
    EtcdClient rc(restored.connection());
    EXPECT_EQ(all_keys(rc), all_keys(client, revision));
    EXPECT_EQ(rc.hash_kv(restored.client_url(), revision).hash(), client.hash_kv(m.client_url(), revision).hash());
  }

  // Continuous backup on this backend: a save, a sidecar with --continuous (and a heartbeat) while
  // puts, a multi-op txn and a delete run, then point-in-time restores to the middle and the end
  // of the log and to a time after the sidecar stopped (proved by its last heartbeat, an
  // overwritten object): each member's HashKV and every key's fields equal the live member's.
  void continuous_backup_and_point_in_time_restore(const std::vector<std::string>& save_extra = {},
                                                   const std::vector<std::string>& read_extra = {}) {
    using namespace std::chrono_literals;
    auto plus = [](std::vector<std::string> args, const std::vector<std::string>& extra) {
      args.insert(args.end(), extra.begin(), extra.end());
      return args;
    };
    auto& m = start_member();
    EtcdClient client(m.connection());
    load_keys(client, "/registry/pods/", 50, 300);
    auto saved = cli_json(
        with_store(plus({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url(), "-o", "json"}, save_extra)),
        store_env());
    std::vector<std::string> argv = {ETCDADM_BIN, "--log-level", "debug", "backup", "sidecar", "--endpoints",
                                     m.client_url(), "--schedule", "@yearly", "--listen", "", "--continuous",
                                     "--segment-interval", "1s", "--heartbeat-interval", "1s"};
    argv = with_store(argv);
    RunOptions ro = store_env();
    ro.env["ETCDADM_CATALOG"] = dir_ / "sidecar-catalog.db";
    auto sidecar = ChildProcess::start(argv, dir_ / "sidecar.log", ro);

    load_keys(client, "/registry/configmaps/", 40, 400, 2);
    etcdserverpb::TxnRequest txn;
    for (int i = 0; i < 4; ++i) {
      auto* put = txn.add_success()->mutable_request_put();
      put->set_key("/registry/txn/k" + std::to_string(i));
      put->set_value("v" + std::to_string(i));
    }
    txn.add_success()->mutable_request_delete_range()->set_key("/registry/pods/k-000003");
    client.txn(txn);
    const int64_t middle = client.status(m.client_url()).header().revision();
    load_keys(client, "/registry/secrets/", 30, 500, 3);
    client.put("/registry/pods/k-000004", "overwritten");
    const int64_t last = client.status(m.client_url()).header().revision();
    ASSERT_EQ(wait_for_change_log(store_flags(), last, store_env()), last) << read_file(dir_ / "sidecar.log");
    // A time after the last write that only the heartbeat of the sidecar's clean stop can prove.
    const std::string quiet = format_rfc3339_micros(std::chrono::system_clock::now());
    EXPECT_EQ(sidecar.stop(10000ms), 0);

    auto verified = cli_json(with_store(plus({"backup", "verify", "latest", "-o", "json"}, read_extra)), store_env());
    EXPECT_EQ(verified["changeLog"]["records"], last - saved["revision"].get<int64_t>()) << verified.dump();
    int n = 0;
    for (const auto& target : std::vector<std::vector<std::string>>{
             {"--to-revision", std::to_string(middle)}, {"--to-revision", "end"}, {"--to-time", quiet}}) {
      const int64_t revision = n == 0 ? middle : last;
      SCOPED_TRACE(target[0] + " " + target[1]);
      EtcdOptions eo;
      eo.name = "r" + std::to_string(n);
      eo.peer_port = free_port();
      eo.data_dir = dir_ / ("pitr-" + std::to_string(n++));
      eo.initial_cluster_token = "etcd-cluster";
      auto rr = cli(with_store(plus(plus({"backup", "restore", "latest", "--data-dir", eo.data_dir, "--name", eo.name,
                                          "--initial-advertise-peer-urls", "http://127.0.0.1:" + std::to_string(eo.peer_port),
                                          "--keep-revision"},  // compared at the target revision
                                         target),
                                    read_extra)),
                    store_env());
      ASSERT_EQ(rr.exit_code, 0) << rr.output;
      auto& restored = start_member(eo);
      EtcdClient rc(restored.connection());
      EXPECT_EQ(rc.status(restored.client_url()).header().revision(), revision);
      EXPECT_EQ(rc.hash_kv(restored.client_url(), revision).hash(), client.hash_kv(m.client_url(), revision).hash());
      EXPECT_EQ(all_key_fields(rc, revision), all_key_fields(client, revision));
      restored.stop();
    }
  }

  // How a backend's requests read in FaultProxy::requests(), for counting them.
  struct ListingRequests {
    std::string page;           // in every listing page's request line
    std::string range_start;    // in the request line of a listing that starts after a name
    std::string metadata_read;  // in the request line of one _etcd_backup.meta read
  };

  // Issue 15's stores at scale, on any object store: `count` backups of two small objects each
  // (etcd-manager's shape: the data file and _etcd_backup.meta, a minute apart, the newest a minute
  // ago) written through open_store() by 16 threads, then `backup list -o json` through `proxy`
  // (`via_proxy`: the store flags and env that send the CLI there):
  //   - cold (no catalog): one listing pass and one read of each backup's metadata, nothing else;
  //   - warm: at most 2 requests, one of them a range listing;
  //   - a backup deleted behind the catalog's back stays listed until --resync, which lists the
  //     store once more and reads no metadata again.
  // Returns the backups' names, oldest first, without the one deleted.
  std::vector<std::string> list_many_backups_through_proxy(int count, const std::function<std::unique_ptr<BlobStore>()>& open_store,
                                                           FaultProxy& proxy, const std::vector<std::string>& flags_via_proxy,
                                                           const RunOptions& env_via_proxy, const ListingRequests& patterns) {
    const int64_t newest = to_unix_micros(std::chrono::system_clock::now()) / 1000000 - 60;
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) names.push_back(make_backup_name(from_unix_micros((newest - (count - 1 - i) * 60LL) * 1000000)));
    {
      std::atomic<int> next{0};
      std::vector<std::thread> writers;
      for (int t = 0; t < 16; ++t) {
        writers.emplace_back([&] {
          auto s = open_store();
          for (int i; (i = next.fetch_add(1)) < count;) {
            const int64_t ts = newest - (count - 1 - i) * 60LL;
            s->write_small(names[i] + "/etcd.backup.gz", "64 bytes of nothing: the listing is what is measured here");
            s->write_small(names[i] + "/_etcd_backup.meta", etcd_manager_meta_json("3.5.17", ts, 3));
          }
        });
      }
      for (auto& w : writers) w.join();
    }
    auto list = [&](std::vector<std::string> extra = {}) {
      std::vector<std::string> args = {"backup", "list", "-o", "json"};
      args.insert(args.end(), flags_via_proxy.begin(), flags_via_proxy.end());
      args.insert(args.end(), extra.begin(), extra.end());
      return cli_json(args, env_via_proxy);
    };
    auto counted = [&](const std::string& what) {
      auto reqs = proxy.requests();
      return std::count_if(reqs.begin(), reqs.end(), [&](const std::string& r) { return r.find(what) != std::string::npos; });
    };
    // 1,000 keys a page. A server may answer a full last page as truncated, and then an empty one.
    auto one_listing_pass = [&](int keys) {
      const int pages = (keys + 999) / 1000;
      const auto n = counted(patterns.page);
      EXPECT_TRUE(n == pages || (keys % 1000 == 0 && n == pages + 1)) << n << " listing requests for " << keys << " keys";
    };

    proxy.clear_requests();
    auto cold = list();
    EXPECT_EQ(cold.size(), static_cast<size_t>(count));
    if (!cold.empty()) {
      EXPECT_EQ(cold[0]["backup"], names.back());
    }
    EXPECT_EQ(counted(patterns.metadata_read), count);  // one request per backup, no HEAD or metadata request first
    one_listing_pass(2 * count);
    EXPECT_LE(proxy.requests().size(), static_cast<size_t>(count + (2 * count + 999) / 1000 + 3)) << proxy.requests().back();

    // Warm: the newest hour's range (and the change log's, when the store has one).
    proxy.clear_requests();
    EXPECT_EQ(list().size(), static_cast<size_t>(count));
    auto reqs = proxy.requests();
    EXPECT_LE(reqs.size(), 2u) << ::testing::PrintToString(reqs);
    EXPECT_EQ(counted(patterns.range_start), 1) << ::testing::PrintToString(reqs);

    // Another host's prune, behind this catalog's back: seen at the next full listing.
    auto direct = open_store();
    const std::string gone = names[100];
    direct->remove(gone + "/_etcd_backup.meta");
    direct->remove(gone + "/etcd.backup.gz");
    names.erase(names.begin() + 100);
    EXPECT_EQ(list().size(), static_cast<size_t>(count));
    proxy.clear_requests();
    auto resynced = list({"--resync"});
    EXPECT_EQ(resynced.size(), static_cast<size_t>(count - 1));
    for (const auto& b : resynced) EXPECT_NE(b["backup"], gone);
    EXPECT_EQ(counted(patterns.metadata_read), 0);  // the catalog had every backup
    one_listing_pass(2 * (count - 1));
    return names;
  }

  static inline int counter_ = 0;
  std::string bucket_;
};

}  // namespace etcdadm::test

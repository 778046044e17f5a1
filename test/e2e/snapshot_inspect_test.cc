// `backup inspect` and `backup get` against snapshots of a real etcd: the etcdctl-compatible status
// fields equal `etcdctl snapshot status`, and the values read natively from the snapshot equal what
// the live cluster returns at the snapshot's revision.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>

#include "common/fs.h"
#include "etcd/datadir/bolt_reader.h"
#include "etcd/datadir/snapshot_inspect.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"

namespace etcdadm::test {

namespace {

class SnapshotInspect : public CliTest {
 protected:
  ProcessResult etcdctl(const EtcdMember& m, std::vector<std::string> args) {
    RunOptions api3 = etcdctl_options();
    args.insert(args.begin(), {"etcdctl", "--endpoints", m.client_url()});
    return run_process(args, api3);
  }

  // `backup inspect ARGS -o json` counting totalKey as the etcd under test's tool does (every bbolt
  // entry up to 3.5, live keys from 3.6).
  nlohmann::json inspect_as_the_tool(std::vector<std::string> args) {
    args.insert(args.begin(), {"backup", "inspect"});
    args.insert(args.end(), {"-o", "json", "--semantics", etcd_under_test().minor});
    return cli_json(args);
  }

  // Writes the scenario; returns the lease ID attached to /registry/leases/node-1.
  int64_t write_scenario(EtcdMember& m, EtcdClient& c) {
    load_keys(c, "/registry/pods/default/pod-", 30, 100, 1);
    load_keys(c, "/registry/configmaps/kube-system/cm-", 10, 200, 2);
    for (int i = 0; i < 3; ++i) c.put("/registry/pods/default/pod-000000", "overwrite-" + std::to_string(i));
    etcdserverpb::DeleteRangeRequest del;
    del.set_key("/registry/pods/default/pod-000001");
    del.set_range_end("/registry/pods/default/pod-000005");  // 4 pods
    c.delete_range(del);
    etcdserverpb::TxnRequest txn;
    auto* p1 = txn.add_success()->mutable_request_put();
    p1->set_key("/registry/secrets/a");
    p1->set_value("secret-a");
    auto* p2 = txn.add_success()->mutable_request_put();
    p2->set_key("/registry/secrets/b");
    p2->set_value("secret-b");
    txn.add_success()->mutable_request_delete_range()->set_key("/registry/configmaps/kube-system/cm-000000");
    c.txn(txn);

    auto grant = etcdctl(m, {"lease", "grant", "600"});
    EXPECT_EQ(grant.exit_code, 0) << grant.output;
    std::smatch match;
    EXPECT_TRUE(std::regex_search(grant.output, match, std::regex("lease ([0-9a-f]+) granted"))) << grant.output;
    std::string lease_hex = match[1];
    auto put = etcdctl(m, {"put", "--lease=" + lease_hex, "/registry/leases/node-1", "held"});
    EXPECT_EQ(put.exit_code, 0) << put.output;

    int64_t compact_at = c.put("/single/key", "v1").header().revision();
    auto compact = etcdctl(m, {"compact", "--physical", std::to_string(compact_at)});
    EXPECT_EQ(compact.exit_code, 0) << compact.output;
    compact_at_ = compact_at;

    // After the compaction: an overwrite and a delete that leave history and a tombstone behind.
    c.put("/single/key", "v2");
    etcdserverpb::DeleteRangeRequest del_b;
    del_b.set_key("/registry/secrets/b");
    c.delete_range(del_b);
    return static_cast<int64_t>(std::stoull(lease_hex, nullptr, 16));
  }

  etcdserverpb::RangeResponse live_range(EtcdClient& c, const std::string& key, const std::string& end, int64_t rev) {
    etcdserverpb::RangeRequest req;
    req.set_key(key);
    req.set_range_end(end);
    req.set_revision(rev);
    return c.range(req);
  }

  void expect_same_kvs(const nlohmann::json& got, const etcdserverpb::RangeResponse& live) {
    ASSERT_EQ(got["kvs"].size(), static_cast<size_t>(live.kvs_size())) << got.dump();
    for (int i = 0; i < live.kvs_size(); ++i) {
      const auto& want = live.kvs(i);
      const auto& kv = got["kvs"][i];
      EXPECT_EQ(kv["key"], want.key());
      EXPECT_EQ(kv["value"], want.value()) << want.key();
      EXPECT_EQ(kv["createRevision"], want.create_revision()) << want.key();
      EXPECT_EQ(kv["modRevision"], want.mod_revision()) << want.key();
      EXPECT_EQ(kv["version"], want.version()) << want.key();
      EXPECT_EQ(kv["lease"], want.lease()) << want.key();
    }
  }

  static void expect_status_equal(const nlohmann::json& ours, const nlohmann::json& etcdctl) {
    for (const char* f : {"hash", "revision", "totalKey", "totalSize"}) {
      EXPECT_EQ(ours[f], etcdctl[f]) << f << "\nours: " << ours.dump() << "\netcdctl: " << etcdctl.dump();
    }
    // etcdutl 3.6+ also reports the storage version ("" before the member has set one).
    if (etcdctl.contains("version") && !etcdctl["version"].get<std::string>().empty()) {
      EXPECT_EQ(ours["version"], etcdctl["version"]) << "ours: " << ours.dump() << "\netcdutl: " << etcdctl.dump();
    }
  }

  int64_t compact_at_ = 0;
};

}  // namespace

TEST_F(SnapshotInspect, StatusGetAndStatsMatchEtcdAndEtcdctl) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  int64_t lease = write_scenario(m1, client);

  std::string file = dir_ / "snap.db";
  etcdctl_snapshot(m1, file);
  auto want = snapshot_status(file);
  int64_t rev = want["revision"];

  auto got = inspect_as_the_tool({"--file", file});
  expect_status_equal(got, want);
  EXPECT_EQ(got["file"], file);
  EXPECT_EQ(got["trailerChecked"], false);  // inspect skips the SHA-256 pass unless asked
  EXPECT_EQ(got["clusterVersion"], etcd_under_test().cluster_version());
  ASSERT_EQ(got["members"].size(), 1u);
  EXPECT_EQ(got["members"][0]["name"], "m1");
  EXPECT_EQ(got["members"][0]["peerUrls"][0], m1.peer_url());
  EXPECT_GT(got["consistentIndex"].get<uint64_t>(), 0u);
  EXPECT_EQ(got["scheduledCompactRevision"], compact_at_);
  EXPECT_EQ(got["finishedCompactRevision"], compact_at_);
  EXPECT_EQ(got["authEnabled"], false);
  EXPECT_TRUE(got["alarms"].empty());
  ASSERT_EQ(got["leases"].size(), 1u);
  EXPECT_EQ(got["leases"][0]["id"], lease);
  EXPECT_EQ(got["leases"][0]["ttl"], 600);

  // Live keys per prefix: 26 pods (30 - 4), 9 configmaps (10 - 1), 1 lease, 1 secret (b deleted), 1 /single.
  auto live = all_keys(client, rev);
  ASSERT_EQ(live.size(), 38u);
  EXPECT_EQ(got["liveKeys"], 38);
  std::map<std::string, std::pair<uint64_t, uint64_t>> want_prefixes;
  for (const auto& [k, v] : live) {
    std::string p = k.rfind("/registry/", 0) == 0 ? k.substr(0, k.find('/', 10)) : "/single";
    want_prefixes[p].first++;
    want_prefixes[p].second += k.size() + v.size();
  }
  ASSERT_EQ(want_prefixes.size(), 5u);
  EXPECT_EQ(want_prefixes["/registry/pods"].first, 26u);
  ASSERT_EQ(got["prefixes"].size(), want_prefixes.size()) << got["prefixes"].dump();
  for (const auto& p : got["prefixes"]) {
    auto& w = want_prefixes[p["prefix"].get<std::string>()];
    EXPECT_EQ(p["keys"], w.first) << p.dump();
    EXPECT_EQ(p["bytes"], w.second) << p.dump();
  }
  // The same counts when the latest-state table is frozen after 1, 2, ... keys and the rest of the
  // key bucket is counted from scratch files: at some of these points keys the frozen table holds
  // are overwritten or deleted after the switch, at all of them keys it does not hold are.
  {
    auto db = BoltReader::open(file);
    for (size_t limit = 1; limit <= 48; ++limit) {
      SCOPED_TRACE("in-memory keys: " + std::to_string(limit));
      SnapshotInspection spilled = inspect_snapshot(*db, 2, limit);
      EXPECT_EQ(spilled.live_keys, 38u);
      ASSERT_EQ(spilled.prefixes.size(), want_prefixes.size());
      for (const auto& p : spilled.prefixes) {
        EXPECT_EQ(p.keys, want_prefixes[p.prefix].first) << p.prefix;
        EXPECT_EQ(p.bytes, want_prefixes[p.prefix].second) << p.prefix;
      }
    }
  }
  auto deep = cli_json({"backup", "inspect", "--file", file, "-o", "json", "--prefix-depth", "1"});
  ASSERT_EQ(deep["prefixes"].size(), 2u);
  EXPECT_EQ(deep["prefixes"][0]["prefix"], "/registry");
  EXPECT_EQ(deep["prefixes"][0]["keys"], 37);
  auto v36 = cli_json({"backup", "inspect", "--file", file, "-o", "json", "--semantics", "3.6"});
  EXPECT_EQ(v36["totalKey"], 38);
  EXPECT_EQ(v36["hash"], want["hash"]);

  // Later writes must not show up in what we read from the snapshot.
  client.put("/registry/pods/default/pod-000000", "after-snapshot");
  client.put("/registry/pods/default/pod-000001", "recreated-after-snapshot");

  auto one = cli_json({"backup", "get", "--file", file, "/registry/pods/default/pod-000000", "-o", "json"});
  expect_same_kvs(one, live_range(client, "/registry/pods/default/pod-000000", "", rev));
  EXPECT_EQ(one["kvs"][0]["version"], 4);
  EXPECT_EQ(one["revision"], rev);
  auto pods = cli_json({"backup", "get", "--file", file, "/registry/pods/", "--prefix", "-o", "json"});
  expect_same_kvs(pods, live_range(client, "/registry/pods/", "/registry/pods0", rev));
  auto everything = cli_json({"backup", "get", "--file", file, "", "--prefix", "-o", "json"});
  expect_same_kvs(everything, live_range(client, std::string(1, '\0'), std::string(1, '\0'), rev));
  auto leased = cli_json({"backup", "get", "--file", file, "/registry/leases/node-1", "-o", "json"});
  EXPECT_EQ(leased["kvs"][0]["lease"], lease);
  auto single = cli_json({"backup", "get", "--file", file, "/single/key", "-o", "json"});
  expect_same_kvs(single, live_range(client, "/single/key", "", rev));
  EXPECT_EQ(single["kvs"][0]["value"], "v2");

  auto deleted = cli({"backup", "get", "--file", file, "/registry/pods/default/pod-000001"});
  EXPECT_EQ(deleted.exit_code, 3) << deleted.output;
  auto deleted_b = cli({"backup", "get", "--file", file, "/registry/secrets/b", "-o", "raw"});
  EXPECT_EQ(deleted_b.exit_code, 3) << deleted_b.output;
  auto raw = cli({"--log-level", "warn", "backup", "get", "--file", file, "/registry/secrets/a", "-o", "raw"});
  EXPECT_EQ(raw.exit_code, 0) << raw.output;
  EXPECT_EQ(raw.output, "secret-a");
  auto table = cli({"backup", "inspect", "--file", file});
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("/registry/pods"), std::string::npos) << table.output;
}

TEST_F(SnapshotInspect, StoreBackupInspectAndGet) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  load_keys(client, "/registry/pods/default/pod-", 20, 300, 3);
  client.put("/registry/pods/default/pod-000003", "changed");
  auto saved = save(m1);
  int64_t rev = saved["revision"];
  client.put("/registry/pods/default/pod-000003", "after-backup");

  std::string fetched = dir_ / "fetched.db";
  auto r = cli({"backup", "restore", "latest", "--store", store_, "--output", fetched});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto want = snapshot_status(fetched);

  auto got = inspect_as_the_tool({"latest", "--store", store_});
  expect_status_equal(got, want);
  EXPECT_EQ(got["revision"], rev);
  EXPECT_EQ(got["backup"], saved["backup"]);
  EXPECT_EQ(got["liveKeys"], 20);

  std::string name = saved["backup"];
  auto one = cli_json(
      {"backup", "get", name.substr(0, 13), "/registry/pods/default/pod-000003", "--store", store_, "-o", "json"});
  expect_same_kvs(one, live_range(client, "/registry/pods/default/pod-000003", "", rev));
  EXPECT_EQ(one["kvs"][0]["value"], "changed");
  auto keys =
      cli_json({"backup", "get", "latest", "/registry/", "--prefix", "--keys-only", "--store", store_, "-o", "json"});
  EXPECT_EQ(keys["count"], 20);
  EXPECT_FALSE(keys["kvs"][0].contains("value"));
}

// Auth on (users and roles) and a NOSPACE alarm raised by a small backend quota: inspect reports
// both, and the status fields still equal etcdctl's.
TEST_F(SnapshotInspect, AuthAndNospaceAlarmAreReported) {
  EtcdOptions o;
  o.extra_flags = {"--quota-backend-bytes=2097152"};
  auto& m = start_member(o);
  for (std::vector<std::string> cmd : {std::vector<std::string>{"user", "add", "root:rootpw", "--interactive=false"},
                                       {"role", "add", "root"},
                                       {"user", "grant-role", "root", "root"},
                                       {"user", "add", "alice:alicepw", "--interactive=false"},
                                       {"role", "add", "reader"},
                                       {"role", "grant-permission", "reader", "read", "/registry/", "--prefix=true"},
                                       {"user", "grant-role", "alice", "reader"},
                                       {"auth", "enable"}}) {
    auto r = etcdctl(m, cmd);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  ConnectionConfig root = m.connection();
  root.user = "root";
  root.password = "rootpw";
  EtcdClient client(root);
  std::string big(64 * 1024, 'x');
  bool nospace = false;
  for (int i = 0; i < 200 && !nospace; ++i) {
    try {
      client.put("/registry/blobs/b" + std::to_string(i), big + std::to_string(i));
    } catch (const Error& e) {
      nospace = std::string(e.what()).find("space exceeded") != std::string::npos;
      ASSERT_TRUE(nospace) << e.what();
    }
  }
  ASSERT_TRUE(nospace) << "the 2 MiB quota was never exceeded";
  std::string file = dir_ / "auth.db";
  auto saved = etcdctl(m, {"--user", "root:rootpw", "snapshot", "save", file});
  ASSERT_EQ(saved.exit_code, 0) << saved.output;

  auto got = inspect_as_the_tool({"--file", file});
  expect_status_equal(got, snapshot_status(file));
  EXPECT_EQ(got["authEnabled"], true) << got.dump();
  EXPECT_EQ(got["users"], 2);
  EXPECT_EQ(got["roles"], 2);
  ASSERT_EQ(got["alarms"].size(), 1u) << got.dump();
  EXPECT_NE(got["alarms"][0].get<std::string>().find("NOSPACE"), std::string::npos) << got.dump();
  auto table = cli({"backup", "inspect", "--file", file});
  EXPECT_NE(table.output.find("NOSPACE"), std::string::npos) << table.output;
}

TEST_F(SnapshotInspect, CorruptFilesExitWithCorrupt) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  load_keys(client, "/k/", 50, 200, 4);
  std::string file = dir_ / "snap.db";
  etcdctl_snapshot(m1, file);
  std::string bytes = read_file(file);

  // An intact file with --check-trailer: the trailer is checked (on a second thread) and says so.
  auto checked = cli_json({"backup", "inspect", "--file", file, "--check-trailer", "-o", "json"});
  EXPECT_EQ(checked["trailerChecked"], true);

  // A flipped byte: the SHA-256 trailer no longer matches. inspect checks it only with
  // --check-trailer; get checks it before reading.
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x5a;
  write_file_atomic(dir_ / "flipped.db", flipped);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"backup", "inspect", "--file", dir_ / "flipped.db", "--check-trailer"},
        std::vector<std::string>{"backup", "get", "--file", dir_ / "flipped.db", "/k/", "--prefix"}}) {
    auto r = cli(args);
    EXPECT_EQ(r.exit_code, 5) << r.output;
    EXPECT_NE(r.output.find("SHA-256"), std::string::npos) << r.output;
  }
  // A truncated file fails the size rule whether or not the trailer is checked.
  write_file_atomic(dir_ / "truncated.db", bytes.substr(0, bytes.size() - 100));
  auto t = cli({"backup", "inspect", "--file", dir_ / "truncated.db"});
  EXPECT_EQ(t.exit_code, 5) << t.output;
  EXPECT_NE(t.output.find("truncated"), std::string::npos) << t.output;

  // No trailer to check against and every page after the metas garbage: the bbolt reader refuses it.
  std::string garbage = bytes.substr(0, bytes.size() - 32);
  for (size_t i = 2 * 4096; i < garbage.size(); ++i) garbage[i] = static_cast<char>(0xab);
  write_file_atomic(dir_ / "garbage.db", garbage);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"backup", "inspect", "--file", dir_ / "garbage.db"},
        std::vector<std::string>{"backup", "get", "--file", dir_ / "garbage.db", "/k/", "--prefix"}}) {
    auto g = cli(args);
    EXPECT_EQ(g.exit_code, 5) << g.output;
    EXPECT_NE(g.output.find("Error:"), std::string::npos) << g.output;
  }
}

}  // namespace etcdadm::test

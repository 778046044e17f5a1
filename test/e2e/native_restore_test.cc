// The native restore against the etcd under test and its own restore tool (etcdctl 3.4 / etcdutl
// 3.5+) as oracles, with etcd's Go packages reading what we wrote (the datadir-oracle test tool:
// bbolt's Tx.Check, etcd's WAL and snap readers, and a read-only replay of etcd 3.6's bootstrap):
//   - the data dir equals the tool's for the same snapshot and flags, file for file and record for
//     record (the db in content; its page layout is bbolt's business);
//   - three natively restored members form the cluster the tool's IDs describe, with the source's
//     HashKV at the snapshot revision;
//   - --bump-revision/--mark-compacted: the revision moves by N, old revisions read as compacted,
//     and the next write lands at snapshot + N + 1 (on 3.4 too, which has no such tool);
//   - by default a keyspace with Kubernetes' keys (/registry/) is moved by 10^9 and marked
//     compacted, natively and with etcdutl, and any other keyspace is restored as it was;
//   - kill -9 at each step leaves no data dir (or, after the rename, a whole one), and the next
//     restore succeeds.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/fs.h"
#include "common/subprocess.h"
#include "restore/new_cluster.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"
#include "test/support/object_servers.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

nlohmann::json oracle(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {go_test_tool("datadir-oracle")};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_process(argv);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto start = r.output.find('{');
  if (r.exit_code != 0 || start == std::string::npos) return nlohmann::json::object();
  return nlohmann::json::parse(r.output.substr(start));
}

std::string tool_name() { return etcd_under_test().has_etcdutl() ? "etcdutl" : "etcdctl"; }

class NativeRestore : public CliTest {
 protected:
  // A member with keys (puts, overwrites, a delete, a leased key), backed up to store_; stopped.
  struct Source {
    int64_t revision = 0;
    uint32_t hash = 0;
    std::vector<std::pair<std::string, std::string>> keys;
  };
  Source make_backup(int keys = 200, size_t value_size = 300, const std::string& prefix = "/registry/pods/default/pod-") {
    auto& m = start_member();
    EtcdClient client(m.connection());
    load_keys(client, prefix, keys, value_size, 3);
    load_keys(client, prefix, keys / 10, value_size, 4);  // overwrites
    etcdserverpb::DeleteRangeRequest del;
    del.set_key(prefix + "000003");
    client.delete_range(del);
    RunOptions api3 = etcdctl_options();
    auto lease = run_process({"etcdctl", "--endpoints", m.client_url(), "lease", "grant", "3600"}, api3);
    EXPECT_EQ(lease.exit_code, 0) << lease.output;
    std::string id = lease.output.substr(lease.output.find("lease ") + 6, 16);
    id = id.substr(0, id.find(' '));
    auto put = run_process({"etcdctl", "--endpoints", m.client_url(), "put", "--lease=" + id, "/leased", "v"}, api3);
    EXPECT_EQ(put.exit_code, 0) << put.output;
    auto saved = save(m);
    Source s;
    s.revision = saved["revision"];
    s.keys = all_keys(client, s.revision);
    s.hash = client.hash_kv(m.client_url(), s.revision).hash();
    m.stop();
    return s;
  }

  // The one member of a restored single-member cluster: m1, token "tok", a free peer port, its
  // data dir `name` in the test's directory.
  EtcdOptions single_member(const std::string& name) {
    EtcdOptions o;
    o.name = "m1";
    o.peer_port = free_port();
    o.initial_cluster_token = "tok";
    o.data_dir = dir_ / name;
    return o;
  }

  // The same at the snapshot's own revision (--keep-revision): compared with etcd's tool and the
  // source's HashKV, which know nothing of the Kubernetes default.
  std::vector<std::string> kept_restore_args(const std::string& data_dir, const std::string& name,
                                             const std::string& cluster, const std::string& peer_url) {
    auto args = restore_args(data_dir, name, cluster, peer_url);
    args.push_back("--keep-revision");
    return args;
  }
  std::vector<std::string> restore_args(const std::string& data_dir, const std::string& name, const std::string& cluster,
                                        const std::string& peer_url) {
    return {"backup", "restore", "latest", "--store", store_, "--data-dir", data_dir, "--name", name,
            "--initial-cluster", cluster, "--initial-cluster-token", "tok", "--initial-advertise-peer-urls", peer_url,
            "-o", "json"};
  }
};

// What may differ between our data dir and the tool's: the db's page layout (so its size), and
// with several members in etcd 3.6+, the order in which the tool created them in the v2 store
// (Go's random map order; the v2 store's members are compared as a set instead).
nlohmann::json comparable(nlohmann::json dump) {
  for (auto& f : dump["files"]) {
    if (f["path"] == "member/snap/db") f.erase("size");
  }
  dump["db"].erase("dataSize");
  dump["db"].erase("fileSize");
  return dump;
}

}  // namespace

TEST_F(NativeRestore, DataDirMatchesEtcdsOwnRestore) {
  make_backup();
  for (const std::string cluster : {"m1=http://127.0.0.1:2380",
                                    "m1=http://127.0.0.1:2380,m2=http://127.0.0.2:2380,m3=http://127.0.0.3:2380"}) {
    SCOPED_TRACE(cluster);
    std::string ours = dir_ / "native", theirs = dir_ / "tool";
    auto r = cli(kept_restore_args(ours, "m1", cluster, "http://127.0.0.1:2380"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("\"restoreWith\": \"native\""), std::string::npos) << r.output;
    auto args = kept_restore_args(theirs, "m1", cluster, "http://127.0.0.1:2380");
    args.insert(args.end(), {"--restore-with", tool_name()});
    r = cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;

    nlohmann::json a = comparable(oracle({"dump-datadir", ours}));
    nlohmann::json b = comparable(oracle({"dump-datadir", theirs}));
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a["files"], b["files"]);
    EXPECT_EQ(a["wal"], b["wal"]) << "the WAL, record for record";
    EXPECT_EQ(a["bootstrap"], b["bootstrap"]) << "what etcd's bootstrap reads from it";
    EXPECT_EQ(a["revisions"], b["revisions"]);
    EXPECT_EQ(a["etcdWarnings"], b["etcdWarnings"]);
    bool random_order = etcd_under_test().minor_number() >= 6 && cluster.find("m2") != std::string::npos;
    if (random_order) {
      EXPECT_EQ(a["snap"]["metadata"], b["snap"]["metadata"]);
      EXPECT_EQ(a["snap"]["snapDataParsed"]["Root"]["Children"]["0"]["Children"]["members"]["Children"].size(), 3u);
    } else {
      EXPECT_EQ(a["snap"], b["snap"]);
    }
    if (etcd_under_test().minor_number() == 4) {
      // etcdctl 3.4 leaves the old cluster's members in the db (3.4 reads membership from the
      // .snap file, 3.5+ from the db): ours holds the new members, as etcdutl 3.5+ writes them.
      nlohmann::json members = a["db"]["buckets"]["members"];
      EXPECT_EQ(members.size(), cluster.find("m2") != std::string::npos ? 3u : 1u) << members.dump();
      for (const char* bucket : {"members", "members_removed"}) {
        a["db"]["buckets"].erase(bucket);
        b["db"]["buckets"].erase(bucket);
      }
    }
    EXPECT_EQ(a["db"], b["db"]) << "every bucket, key and value";
    remove_all(ours);
    remove_all(theirs);
  }
}

TEST_F(NativeRestore, ThreeRestoredMembersFormTheClusterTheToolsIdsDescribe) {
  Source s = make_backup();
  std::vector<int> peer_ports = {free_port(), free_port(), free_port()};
  std::string cluster;
  for (int i = 0; i < 3; ++i) {
    cluster += (i ? "," : "") + std::string("m") + std::to_string(i + 1) + "=http://127.0.0.1:" + std::to_string(peer_ports[i]);
  }
  std::vector<EtcdMember*> m;
  std::set<std::string> native_ids;
  std::string native_cluster_id;
  for (int i = 0; i < 3; ++i) {
    EtcdOptions o;
    o.name = "m" + std::to_string(i + 1);
    o.peer_port = peer_ports[i];
    o.initial_cluster = cluster;
    o.initial_cluster_token = "tok";
    o.data_dir = dir_ / ("restored-" + o.name);
    auto j = cli_json(kept_restore_args(o.data_dir, o.name, cluster, "http://127.0.0.1:" + std::to_string(peer_ports[i])));
    native_ids.insert(j["memberId"].get<std::string>());
    native_cluster_id = j["clusterId"];
    members_.push_back(std::make_unique<EtcdMember>(dir_.path(), o));
    m.push_back(members_.back().get());
  }
  // The tool's IDs for the same flags, from the WAL metadata it writes.
  std::set<std::string> tool_ids;
  std::string tool_cluster_id;
  for (int i = 0; i < 3; ++i) {
    std::string d = dir_ / ("tool-m" + std::to_string(i + 1));
    auto args = kept_restore_args(d, "m" + std::to_string(i + 1), cluster, "http://127.0.0.1:" + std::to_string(peer_ports[i]));
    args.insert(args.end(), {"--restore-with", tool_name()});
    ASSERT_EQ(cli(args).exit_code, 0);
    auto dump = oracle({"dump-datadir", d});
    tool_ids.insert(dump["wal"]["metadata"]["nodeID"].get<std::string>());
    tool_cluster_id = dump["wal"]["metadata"]["clusterID"];
  }
  EXPECT_EQ(native_ids, tool_ids);
  EXPECT_EQ(native_cluster_id, tool_cluster_id);

  std::vector<std::thread> starters;
  for (auto* x : m) starters.emplace_back([x] { x->start(); });
  for (auto& t : starters) t.join();
  EtcdClient client(m[0]->connection());
  auto st = client.status(m[0]->client_url());
  EXPECT_EQ(id_hex(st.header().cluster_id()), native_cluster_id);
  std::set<std::string> listed;
  for (auto* x : m) {
    EtcdClient c(x->connection());
    listed.insert(id_hex(c.status(x->client_url()).header().member_id()));
    EXPECT_EQ(c.hash_kv(x->client_url(), s.revision).hash(), s.hash) << x->client_url();
  }
  EXPECT_EQ(listed, native_ids);
  EXPECT_EQ(all_keys(client, s.revision), s.keys);
  client.put("/after/restore", "three members agree");
  EtcdClient third(m[2]->connection());
  auto seen = all_keys(third);
  EXPECT_NE(std::find(seen.begin(), seen.end(), std::make_pair(std::string("/after/restore"), std::string("three members agree"))),
            seen.end());
}

// Restores are Kubernetes-safe by default: no flag, and the /registry/ keyspace comes back past every
// revision its clients saw, old revisions compacted (a watch from one gets "compacted": informers
// re-list); --keep-revision restores it as it was, with a warning.
TEST_F(NativeRestore, AKubernetesKeyspaceIsBumpedByDefault) {
  Source s = make_backup(50, 100);
  constexpr int64_t kDefault = 1000000000;
  EtcdOptions o = single_member("k8s");
  const std::string peer = "http://127.0.0.1:" + std::to_string(o.peer_port);
  auto j = cli_json(restore_args(o.data_dir, "m1", "m1=" + peer, peer));
  EXPECT_EQ(j["snapshotRevision"], s.revision);
  EXPECT_EQ(j["revision"], s.revision + kDefault);
  EXPECT_EQ(j["revisionBump"]["by"], kDefault) << j.dump();
  EXPECT_EQ(j["revisionBump"]["markedCompacted"], true) << j.dump();
  EXPECT_EQ(j["revisionBump"]["reason"], "kubernetes-keys") << j.dump();
  EXPECT_EQ(oracle({"revisions", o.data_dir + "/member/snap/db"})["latestMainRevision"], s.revision + kDefault);

  // The table says what was done and why.
  std::string table_dir = dir_ / "k8s-table";
  auto table_args = restore_args(table_dir, "m1", "m1=" + peer, peer);
  table_args.resize(table_args.size() - 2);  // no -o json
  auto table = cli(table_args);
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("moved forward by 1000000000"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("Kubernetes' keys (/registry/)"), std::string::npos) << table.output;

  // --keep-revision: as it was, and a warning; it excludes --bump-revision.
  auto keep_args = restore_args(dir_ / "kept", "m1", "m1=" + peer, peer);
  keep_args.push_back("--keep-revision");
  auto kept = cli_json(keep_args);
  EXPECT_EQ(kept["revision"], s.revision);
  EXPECT_EQ(kept["revisionBump"]["reason"], "kept") << kept.dump();
  keep_args = restore_args(dir_ / "both", "m1", "m1=" + peer, peer);
  keep_args.insert(keep_args.end(), {"--keep-revision", "--bump-revision", "5", "--mark-compacted"});
  auto both = cli(keep_args);
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_FALSE(path_exists(dir_ / "both"));

  // etcd's own tool, untold, gets the same default (etcdutl 3.5+); etcdctl 3.4, which cannot bump,
  // is refused with the two ways that work.
  auto tool_args = restore_args(dir_ / "tool", "m1", "m1=" + peer, peer);
  tool_args.insert(tool_args.end(), {"--restore-with", tool_name()});
  if (etcd_under_test().has_etcdutl()) {
    auto t = cli_json(tool_args);
    EXPECT_EQ(t["revisionBump"]["reason"], "kubernetes-keys") << t.dump();
    EXPECT_EQ(oracle({"revisions", std::string(dir_ / "tool") + "/member/snap/db"})["latestMainRevision"],
              s.revision + kDefault);
  } else {
    auto refused = cli(tool_args);
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find("cannot bump the revision"), std::string::npos) << refused.output;
    EXPECT_NE(refused.output.find("--keep-revision"), std::string::npos) << refused.output;
    EXPECT_FALSE(path_exists(dir_ / "tool"));
  }

  auto& m = start_member(o);
  EtcdClient client(m.connection());
  EXPECT_EQ(all_keys(client), s.keys);
  RunOptions watch_opts = etcdctl_options();
  watch_opts.timeout = 10s;
  auto watch = run_process({"etcdctl", "--endpoints", m.client_url(), "watch", "/registry/", "--prefix", "--rev",
                            std::to_string(s.revision)},
                           watch_opts);
  EXPECT_NE(watch.output.find("compacted"), std::string::npos) << watch.output;
  EXPECT_EQ(client.put("/registry/after", "x").header().revision(), s.revision + kDefault + 1);
}

// A keyspace without Kubernetes' keys is restored at its own revision: the source's HashKV there.
TEST_F(NativeRestore, APlainKeyspaceIsRestoredAsItWas) {
  Source s = make_backup(50, 100, "/app/config/item-");
  EtcdOptions o = single_member("plain");
  const std::string peer = "http://127.0.0.1:" + std::to_string(o.peer_port);
  auto j = cli_json(restore_args(o.data_dir, "m1", "m1=" + peer, peer));
  EXPECT_EQ(j["revision"], s.revision);
  EXPECT_EQ(j["revisionBump"]["by"], 0) << j.dump();
  EXPECT_EQ(j["revisionBump"]["reason"], "none") << j.dump();
  auto& m = start_member(o);
  EtcdClient client(m.connection());
  EXPECT_EQ(all_keys(client, s.revision), s.keys);
  EXPECT_EQ(client.hash_kv(m.client_url(), s.revision).hash(), s.hash);
}

TEST_F(NativeRestore, BumpRevisionAndMarkCompactedAsKubernetesNeeds) {
  Source s = make_backup(50, 100);
  constexpr int64_t kBump = 1000000;
  EtcdOptions o = single_member("bumped");
  const std::string peer = "http://127.0.0.1:" + std::to_string(o.peer_port);
  auto args = restore_args(o.data_dir, "m1", "m1=" + peer, peer);
  args.insert(args.end(), {"--bump-revision", std::to_string(kBump), "--mark-compacted"});
  auto j = cli_json(args);
  EXPECT_EQ(j["snapshotRevision"], s.revision);
  EXPECT_EQ(j["revision"], s.revision + kBump);
  auto revs = oracle({"revisions", o.data_dir + "/member/snap/db"});
  EXPECT_EQ(revs["latestMainRevision"], s.revision + kBump);
  if (etcd_under_test().has_etcdutl()) {
    // etcdutl's own bump of the same snapshot: the same keys and meta.
    std::string theirs = dir_ / "tool-bumped";
    auto targs = restore_args(theirs, "m1", "m1=" + peer, peer);
    targs.insert(targs.end(), {"--restore-with", "etcdutl", "--bump-revision", std::to_string(kBump), "--mark-compacted"});
    ASSERT_EQ(cli(targs).exit_code, 0);
    auto a = oracle({"dump-db", o.data_dir + "/member/snap/db"});
    auto b = oracle({"dump-db", theirs + "/member/snap/db"});
    EXPECT_EQ(a["buckets"], b["buckets"]);
    EXPECT_EQ(revs, oracle({"revisions", theirs + "/member/snap/db"}));
  } else {
    // etcdctl 3.4.23 has no --bump-revision (its own help says so): refused, the native way named.
    std::string theirs = dir_ / "tool-bumped";
    auto targs = restore_args(theirs, "m1", "m1=" + peer, peer);
    targs.insert(targs.end(), {"--restore-with", "etcdctl", "--bump-revision", std::to_string(kBump), "--mark-compacted"});
    auto refused = cli(targs);
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find("has no --bump-revision"), std::string::npos) << refused.output;
    EXPECT_FALSE(path_exists(theirs));
  }

  auto& m = start_member(o);
  EtcdClient client(m.connection());
  // Every key reads back, at the bumped revision.
  auto now = all_keys(client);
  EXPECT_EQ(now, s.keys);
  // Old revisions are compacted: a get and a watch from the snapshot's revision are refused.
  RunOptions api3 = etcdctl_options();
  auto get = run_process({"etcdctl", "--endpoints", m.client_url(), "get", "/", "--prefix", "--rev", std::to_string(s.revision)}, api3);
  EXPECT_NE(get.output.find("compacted"), std::string::npos) << get.output;
  RunOptions watch_opts = api3;
  watch_opts.timeout = 10s;
  auto watch = run_process({"etcdctl", "--endpoints", m.client_url(), "watch", "/", "--prefix", "--rev", std::to_string(s.revision)},
                           watch_opts);
  EXPECT_NE(watch.output.find("compacted"), std::string::npos) << watch.output;
  // The next write lands after the bump.
  auto put = client.put("/after/bump", "x");
  EXPECT_EQ(put.header().revision(), s.revision + kBump + 1);
}

TEST_F(NativeRestore, KilledAtEachStepLeavesNoDataDirOrAWholeOneAndTheNextRestoreWorks) {
  make_backup();
  std::string data = dir_ / "data";
  std::string peer = "http://127.0.0.1:2380";
  auto args = restore_args(data, "m1", "m1=" + peer, peer);
  std::vector<std::string> argv = {ETCDADM_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  // SIGKILL at each step of a native restore, in order (failpoints, common/failpoint.h): the
  // fetch, the snapshot placed, the db updated, the WAL written, the member's files complete, and
  // the data dir renamed into place.
  for (const std::string point : {"fetch/data/streaming", "restore/native/placed", "restore/native/db-committed",
                                  "restore/native/wal-written", "restore/native/written", "restore/swap/renamed"}) {
    RunOptions ro;
    ro.env["ETCDADM_CATALOG"] = dir_ / "catalog.db";
    ro.env["ETCDADM_FAILPOINTS"] = point;
    auto killed = run_process(argv, ro);
    ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << point << ": the kill did not land\n" << killed.output;
    if (point == "restore/swap/renamed") {
      // Killed after the rename: the whole data dir, which etcd's reader accepts.
      ASSERT_TRUE(path_exists(data)) << point;
      auto dump = oracle({"dump-datadir", data});
      EXPECT_EQ(dump["bootstrap"]["v2StoreCheck"], "ok (membership only)") << point;
      remove_all(data);
    } else {
      EXPECT_FALSE(path_exists(data)) << "a data dir after a kill at " << point;
    }
  }
  auto r = cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(oracle({"dump-datadir", data}).empty());
  // Every staging dir the kills left is gone: the next restore removed them (no kill here falls
  // between a staging dir's creation and its lock file, the one case it would leave for later).
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_NE(entry.path().filename().string().find(".etcdadm-restore-"), 0u) << "staging dir left after the next restore: " << entry.path();
  }
}

TEST_F(NativeRestore, UnverifiedVersionsAreRefusedNamingEtcdsTool) {
  make_backup(5, 10);
  std::string data = dir_ / "data";
  auto args = restore_args(data, "m1", "m1=http://127.0.0.1:2380", "http://127.0.0.1:2380");
  args.insert(args.end(), {"--target-version", "3.8.0"});
  auto r = cli(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--restore-with etcdutl"), std::string::npos) << r.output;
  EXPECT_FALSE(path_exists(data));

  // Bump without mark (etcdutl's rule), and a member whose peer URLs disagree between the flags.
  auto half = restore_args(data, "m1", "m1=http://127.0.0.1:2380", "http://127.0.0.1:2380");
  half.insert(half.end(), {"--bump-revision", "10"});
  r = cli(half);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("go together"), std::string::npos) << r.output;
  r = cli(restore_args(data, "m1", "m1=http://127.0.0.1:2380", "http://127.0.0.1:2390"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--initial-advertise-peer-urls"), std::string::npos) << r.output;
  EXPECT_FALSE(path_exists(data));
  // A bump means nothing for a plain snapshot file, and native with a tool path is a contradiction.
  std::string file = dir_ / "snap.db";
  r = cli({"backup", "restore", "latest", "--store", store_, "--output-file", file, "--bump-revision", "10", "--mark-compacted"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(path_exists(file));
  auto both = restore_args(data, "m1", "m1=http://127.0.0.1:2380", "http://127.0.0.1:2380");
  both.insert(both.end(), {"--restore-with", "native", "--restore-tool", "/usr/bin/etcdctl"});
  r = cli(both);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(path_exists(data));
}

}  // namespace etcdadm::test

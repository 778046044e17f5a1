// Save -> list -> restore -> start etcd on the restored data, against a real etcd; interop with
// etcdctl (snapshot status, snapshot save) and with stores written in etcd-manager's layout.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/fs.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"
#include "test/support/skips.h"

namespace etcdadm::test {

namespace {

// Writes a mix of puts, overwrites, deletes and a multi-op txn so revisions are non-trivial.
void write_sample_data(EtcdClient& c) {
  load_keys(c, "/registry/pods/default/pod-", 300, 700, 11);
  load_keys(c, "/registry/configmaps/kube-system/cm-", 50, 2000, 12);
  for (int i = 0; i < 20; ++i) c.put("/registry/leases/node-" + std::to_string(i % 5), "renew-" + std::to_string(i));
  etcdserverpb::DeleteRangeRequest del;
  del.set_key("/registry/pods/default/pod-00001");
  del.set_range_end("/registry/pods/default/pod-00002");  // deletes pod-000010 .. pod-000019
  c.delete_range(del);
  c.put(std::string("/binary/\x00\xff", 10), std::string("\x00\x01\x02", 3));
}

class BackupRestore : public CliTest {
 protected:
  // Restores `query` from the store into a new data dir with the CLI's defaults for the cluster
  // flags, and starts a member on it.
  EtcdMember& restore_and_start(const std::string& query, const std::string& name, std::string data_dir = "") {
    EtcdOptions o;
    o.name = name;
    o.peer_port = free_port();
    o.data_dir = data_dir.empty() ? std::string(dir_ / (name + "-data")) : data_dir;
    o.initial_cluster_token = "etcd-cluster";
    // The backup's own revision, whatever the keyspace: these tests read the members at it.
    auto r = cli({"backup", "restore", query, "--store", store_, "--data-dir", o.data_dir, "--name", name,
                  "--initial-advertise-peer-urls", "http://127.0.0.1:" + std::to_string(o.peer_port), "--keep-revision"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return start_member(o);
  }
};

std::string value_of(EtcdClient& client, const std::string& key) {
  for (const auto& [k, v] : all_keys(client)) {
    if (k == key) return v;
  }
  return "(missing)";
}

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_F(BackupRestore, SaveListRestoreStartsWithSameDataAndHashKV) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  write_sample_data(client);

  auto saved = save(m1);
  std::string name = saved["backup"];
  int64_t revision = saved["revision"];
  EXPECT_TRUE(saved["revisionExact"].get<bool>());
  auto before = all_keys(client, revision);
  ASSERT_EQ(before.size(), 346u);  // 300 pods + 50 configmaps + 5 leases + 1 binary - 10 deleted
  uint32_t hash_before = client.hash_kv(m1.client_url(), revision).hash();

  // Later writes must not appear in the restored cluster.
  client.put("/after-backup", "x");

  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["backup"], name);
  EXPECT_EQ(listed[0]["revision"], revision);
  EXPECT_EQ(listed[0]["etcdVersion"], etcd_under_test().version);
  EXPECT_EQ(listed[0]["compression"], "gzip");
  // 3.6+ stream their storage version with the snapshot: recorded beside (not instead of) the
  // server version, which etcd-manager's meta carries too.
  auto meta = nlohmann::json::parse(read_file(store_ + "/" + name + "/etcdadm-backup.json"));
  if (etcd_under_test().at_least("3.6")) {
    EXPECT_EQ(meta["storageVersion"], etcd_under_test().cluster_version()) << meta.dump();
  } else {
    EXPECT_FALSE(meta.contains("storageVersion")) << meta.dump();
  }
  // etcd-manager (v3.0.20260707) restores etcd 3.0 to 3.6 only: a 3.7 backup is not listed to it.
  if (etcd_under_test().at_least("3.7")) {
    EXPECT_FALSE(path_exists(store_ + "/" + name + "/_etcd_backup.meta"));
  } else {
    auto em = nlohmann::json::parse(read_file(store_ + "/" + name + "/_etcd_backup.meta"));
    EXPECT_EQ(em["etcdVersion"], etcd_under_test().version);
  }

  EtcdOptions ro;
  ro.name = "restored";
  ro.peer_port = free_port();
  ro.data_dir = dir_ / "restored-data";
  std::string peer = "http://127.0.0.1:" + std::to_string(ro.peer_port);
  auto r = cli({"backup", "restore", name.substr(0, 16), "--store", store_, "--data-dir", ro.data_dir, "--name", "restored",
                "--initial-advertise-peer-urls", peer, "--initial-cluster", "restored=" + peer, "--initial-cluster-token",
                "restored-token", "--keep-revision"});  // compared by HashKV at the backup's revision
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ro.initial_cluster_token = "restored-token";
  auto& restored = start_member(ro);
  EtcdClient rc(restored.connection());
  auto after = all_keys(rc, revision);
  EXPECT_EQ(after, before);
  EXPECT_EQ(rc.hash_kv(restored.client_url(), revision).hash(), hash_before);
  etcdserverpb::RangeRequest probe;
  probe.set_key("/after-backup");
  EXPECT_EQ(rc.range(probe).kvs_size(), 0);
  // A different cluster: the restore gave it new identities.
  EXPECT_NE(rc.status(restored.client_url()).header().cluster_id(), client.status(m1.client_url()).header().cluster_id());
}

TEST_F(BackupRestore, EtcdctlSnapshotStatusAcceptsOurBackup) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  write_sample_data(client);
  auto saved = save(m1);
  std::string name = saved["backup"];

  std::string out = dir_ / "fetched.db";
  auto r = cli({"backup", "restore", name, "--store", store_, "--output", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = snapshot_status(out);  // etcdutl on 3.5+, etcdctl on 3.4
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["revision"].get<int64_t>(), saved["revision"].get<int64_t>());
  EXPECT_EQ(j["totalSize"].get<uint64_t>(), saved["dbSize"].get<uint64_t>());

  // The stored file is plain gzip: gunzip yields exactly the verified snapshot.
  std::string gz = store_ + "/" + name + "/etcd.backup.gz";
  auto gunzip = run_process({"sh", "-c", "gzip -dc '" + gz + "' | cmp - '" + out + "'"});
  EXPECT_EQ(gunzip.exit_code, 0) << gunzip.output;
  // And the snapshot file is private: it holds every secret of the cluster.
  struct stat sb;
  ASSERT_EQ(::stat(out.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
}

TEST_F(BackupRestore, ImportsAndRestoresAnEtcdctlSnapshot) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  write_sample_data(client);
  auto before = all_keys(client);
  std::string snap = dir_ / "etcdctl.db";
  etcdctl_snapshot(m1, snap);

  auto imported = cli_json({"backup", "import", snap, "--store", store_, "--etcd-version", etcd_under_test().version, "-o", "json"});
  EXPECT_EQ(imported["source"], "import");
  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  ASSERT_EQ(listed.size(), 1u);

  auto& restored = restore_and_start("latest", "imp");
  EtcdClient rc(restored.connection());
  EXPECT_EQ(all_keys(rc), before);

  // A plain db (no trailer) is refused unless the operator says so.
  std::string bare = dir_ / "bare.db";
  std::string bytes = read_file(snap);
  write_file_atomic(bare, bytes.substr(0, bytes.size() - 32));
  auto refused = cli({"backup", "import", bare, "--store", store_});
  EXPECT_EQ(refused.exit_code, 5) << refused.output;
  EXPECT_NE(refused.output.find("no SHA-256 trailer"), std::string::npos) << refused.output;
  auto forced = cli({"backup", "import", bare, "--store", store_, "--skip-hash-check"});
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
}

TEST_F(BackupRestore, ListsAndRestoresAnEtcdManagerStore) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  write_sample_data(client);
  auto before = all_keys(client);
  std::string snap = dir_ / "snap.db";
  etcdctl_snapshot(m1, snap);

  // etcd-manager's layout by hand: gzip'd db + _etcd_backup.meta, no marker, no extra metadata.
  // One meta has the timestamp as a string (Go jsonpb int64), the other as a number.
  const std::string older = "2019-05-07T18:28:01Z-000977", newer = "2019-05-07T18:43:01Z-000978";
  for (const auto& [name, ts] : {std::pair{older, std::string("\"1557253681\"")}, std::pair{newer, std::string("1557254581")}}) {
    make_dirs(store_ + "/" + name);
    ASSERT_EQ(run_process({"sh", "-c", "gzip -c '" + snap + "' > '" + store_ + "/" + name + "/etcd.backup.gz'"}).exit_code, 0);
    write_file_atomic(store_ + "/" + name + "/_etcd_backup.meta",
                      "{\n  \"etcdVersion\": \"3.4.13\",\n  \"timestamp\": " + ts +
                          ",\n  \"clusterSpec\": {\n    \"memberCount\": 1,\n    \"etcdVersion\": \"3.4.13\"\n  }\n}");
  }
  make_dirs(store_ + "/control");
  write_file_atomic(store_ + "/control/etcd-cluster-spec", "{\"memberCount\":1,\"etcdVersion\":\"3.4.13\"}");

  auto listed = cli_json({"backup", "list", "--store", "file://" + store_, "-o", "json"});
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0]["backup"], newer);
  EXPECT_EQ(listed[0]["format"], "etcd-manager");
  EXPECT_EQ(listed[0]["etcdVersion"], "3.4.13");
  EXPECT_EQ(listed[1]["takenAt"], "2019-05-07T18:28:01.000000Z");

  auto verify = cli({"backup", "verify", older, "--store", store_});
  EXPECT_EQ(verify.exit_code, 0) << verify.output;

  auto& restored = restore_and_start("latest", "em");
  EtcdClient rc(restored.connection());
  EXPECT_EQ(all_keys(rc), before);
}

TEST_F(BackupRestore, ZstdStore) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  write_sample_data(client);
  auto saved = save(m1, {"--compression", "zstd"});
  std::string name = saved["backup"];
  EXPECT_TRUE(path_exists(store_ + "/" + name + "/etcd.backup.zst"));
  auto marker = nlohmann::json::parse(read_file(store_ + "/etcdadm-store.json"));
  EXPECT_EQ(marker["compression"], "zstd");
  // The store keeps its format: later saves need no flag, and a contradicting one is refused.
  auto second = save(m1);
  EXPECT_EQ(second["compression"], "zstd");
  auto clash = cli({"backup", "save", "--store", store_, "--endpoints", m1.client_url(), "--compression", "gzip"});
  EXPECT_EQ(clash.exit_code, 2) << clash.output;
  auto v = cli({"backup", "verify", name, "--store", store_});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  auto zstd_test = run_process({"sh", "-c", "command -v zstd >/dev/null || exit 0; zstd -t -q '" + store_ + "/" + name + "/etcd.backup.zst'"});
  EXPECT_EQ(zstd_test.exit_code, 0) << zstd_test.output;
}

TEST_F(BackupRestore, RefusesNonEmptyDataDirUnlessForced) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  client.put("k", "v");
  save(m1);
  std::string data = dir_ / "busy";
  make_dirs(data);
  write_file_atomic(data + "/precious", "do not lose me");
  std::vector<std::string> args = {"backup", "restore", "latest", "--store", store_, "--data-dir", data, "--name", "x",
                                    "--initial-advertise-peer-urls", "http://127.0.0.1:1"};
  auto r = cli(args);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("not empty"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(data + "/precious"), "do not lose me");
  args.push_back("--force");
  auto f = cli(args);
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_FALSE(path_exists(data + "/precious"));
  EXPECT_TRUE(is_directory(data + "/member/wal"));
  // An empty existing dir is fine without --force.
  std::string empty = dir_ / "empty";
  make_dirs(empty);
  auto e = cli({"backup", "restore", "latest", "--store", store_, "--data-dir", empty, "--name", "x",
                "--initial-advertise-peer-urls", "http://127.0.0.1:1"});
  EXPECT_EQ(e.exit_code, 0) << e.output;
}

// /var/lib/etcd on its own disk: the data dir is a mount point, which no rename can replace, on a
// filesystem that a restore staged beside it (on the parent's) cannot rename into. Here the
// parent is a 256 KiB tmpfs that the restore does not fit in, so staging beside the data dir
// fails as well as the swap.
TEST_F(BackupRestore, ADataDirThatIsAMountPointIsRestoredInsideIt) {
  if (::geteuid() != 0) ETCDADM_SKIP_OUTSIDE_CI() << "mounting a tmpfs needs root";
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  load_keys(client, "/registry/big/", 40, 32 * 1024);  // 1.3 MiB: more than the parent holds
  client.put("/which", "first");
  std::string first = save(m1)["backup"];
  client.put("/which", "second");
  save(m1);

  ScopedTmpfs small(dir_ / "small", "size=256k,mode=0755");
  ScopedTmpfs disk(dir_ / "small/disk", "size=256m,mode=0755");  // two members: two 64 MB WALs
  std::string data = dir_ / "small/disk";
  make_dirs(data + "/lost+found", 0700);  // what mkfs.ext4 leaves: the disk still counts as empty

  EtcdMember& restored = restore_and_start(first, "mounted", data);
  EtcdClient rc(restored.connection());
  EXPECT_EQ(value_of(rc, "/which"), "first");
  auto keys = all_keys(rc);
  EXPECT_EQ(std::count_if(keys.begin(), keys.end(), [](const auto& kv) { return kv.first.rfind("/registry/big/", 0) == 0; }), 40);
  restored.stop();
  EXPECT_TRUE(is_filesystem_root(data));
  EXPECT_EQ(entries_of(data), (std::vector<std::string>{"lost+found", "member"}));
  EXPECT_EQ(entries_of(dir_ / "small"), (std::vector<std::string>{"disk"}));
  struct stat st;
  ASSERT_EQ(::stat(data.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u) << "the data dir holds every Secret: owner only";

  // Over it with --force: the old member and whatever else was there go; lost+found stays.
  write_file_atomic(data + "/precious", "replaced with --force");
  std::vector<std::string> args = {"backup", "restore", "latest", "--store", store_, "--data-dir", data,
                                    "--name", "mounted", "--initial-advertise-peer-urls",
                                    "http://127.0.0.1:" + std::to_string(restored.options().peer_port)};
  auto refused = cli(args);
  EXPECT_EQ(refused.exit_code, 4) << refused.output;
  EXPECT_NE(refused.output.find("not empty"), std::string::npos) << refused.output;
  args.push_back("--force");
  auto forced = cli(args);
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_EQ(entries_of(data), (std::vector<std::string>{"lost+found", "member"}));
  restored.start();
  EtcdClient rc2(restored.connection());
  EXPECT_EQ(value_of(rc2, "/which"), "second");
  restored.stop();

  // A read-only disk is refused before anything is fetched, with the reason.
  disk.remount_read_only();
  auto ro = cli(args);
  EXPECT_NE(ro.exit_code, 0) << ro.output;
  EXPECT_NE(ro.output.find("read-only filesystem"), std::string::npos) << ro.output;
  EXPECT_EQ(ro.output.find("verified"), std::string::npos) << "nothing is fetched for a restore that cannot land: " << ro.output;
  disk.remount("size=256m");
}

}  // namespace etcdadm::test

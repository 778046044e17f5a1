// Restores across etcd versions, on real binaries, as etcd allows them (etcd_version.h). Each
// minor's suite (ETCDADM_TEST_ETCD=N) takes backups with the etcd of its neighbours:
//   - from the previous pinned minor: restored natively for N and with N's own tool (first on
//     PATH), etcd N starts on it with the same keys and HashKV at the backup's revision (what a
//     rolling upgrade allows);
//   - of N itself, restored natively for the next minor: that etcd starts on it (etcdctl 3.4's own
//     restore leaves data etcd 3.5+ cannot start on);
//   - from the next minor, or from two minors back: refused by `backup restore`, `init --snapshot`
//     and `init --from-backup` before anything is written or installed, the supported path named,
//     whether the version is recorded in the metadata or only the db tells (an unlabelled import).
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "common/fs.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"
#include "test/support/skips.h"

namespace etcdadm::test {
namespace {

class CrossVersion : public CliTest {
 protected:
  struct Saved {
    std::string store;
    std::string name;
    int64_t revision = 0;
    std::vector<std::pair<std::string, std::string>> keys;
    uint32_t hash = 0;
    std::string snapshot_file;  // the same data as `etcdctl snapshot save` wrote it
  };

  // The pinned minor `delta` minors from the one under test, if there is one.
  std::optional<EtcdRelease> neighbour(int delta) {
    const std::string m = pinned_minor_beside(etcd_under_test().minor, delta);
    if (m.empty()) return std::nullopt;
    return etcd_release(m);  // CI builds every pin: a missing one fails loudly
  }

  // A member of `rel`'s etcd with sample data, a backup of it in a store of its own, and an
  // etcdctl snapshot of the same revision; the member is stopped afterwards.
  Saved backup_from(const EtcdRelease& rel) {
    EtcdOptions o;
    o.name = "src" + std::to_string(rel.minor_number());
    o.etcd_binary = rel.etcd();
    auto& m = start_member(o);
    EtcdClient client(m.connection());
    load_keys(client, "/registry/pods/default/pod-", 120, 400, 7);
    client.put("/registry/leases/kube-node-lease/n1", "renewed");
    etcdserverpb::DeleteRangeRequest del;
    del.set_key("/registry/pods/default/pod-000007");
    client.delete_range(del);

    Saved s;
    s.store = dir_ / ("store-" + rel.minor);
    auto saved = cli_json({"--log-level", "warn", "backup", "save", "--store", s.store, "--endpoints", m.client_url(), "-o", "json"});
    s.name = saved["backup"];
    s.revision = saved["revision"];
    EXPECT_EQ(saved["etcdVersion"], rel.version);
    s.keys = all_keys(client, s.revision);
    s.hash = client.hash_kv(m.client_url(), s.revision).hash();
    s.snapshot_file = dir_ / ("etcdctl-" + rel.minor + ".db");
    RunOptions o2;
    if (!rel.has_etcdutl()) o2.env["ETCDCTL_API"] = "3";
    auto snap = run_process({rel.etcdctl(), "--endpoints", m.client_url(), "snapshot", "save", s.snapshot_file}, o2);
    EXPECT_EQ(snap.exit_code, 0) << snap.output;
    m.stop();
    return s;
  }

  std::vector<std::string> restore_args(const std::string& store, const std::string& data_dir, int peer_port) {
    return {"backup", "restore", "latest", "--store", store, "--data-dir", data_dir, "--name", "r",
            "--initial-advertise-peer-urls", "http://127.0.0.1:" + std::to_string(peer_port),
            "--keep-revision"};  // compared by HashKV at the backup's revision
  }

  // `etcdadm init` of a member of the etcd under test, with everything it would write under `root`.
  std::vector<std::string> init_args(const std::string& root) {
    return {"init", "--name", "m1", "--version", etcd_under_test().version, "--release-url", "file://" + root + "/no-release",
            "--cache-dir", root + "/cache", "--install-dir", root + "/bin", "--certs-dir", root + "/pki",
            "--data-dir", root + "/data", "--config-dir", root + "/conf", "--bind-address", "127.0.0.1",
            "--client-port", std::to_string(free_port()), "--peer-port", std::to_string(free_port()),
            "--init-system", "process"};
  }

  // The command was refused as an unsupported cross-version restore and left nothing behind.
  void expect_refused(const ProcessResult& r, const std::string& supported_path, const std::vector<std::string>& untouched) {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("refusing to restore for etcd " + etcd_under_test().version), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(supported_path), std::string::npos) << r.output;
    for (const auto& path : untouched) EXPECT_FALSE(path_exists(path)) << path << " was written:\n" << r.output;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
      std::string name = entry.path().filename().string();
      EXPECT_EQ(name.find(".etcdadm-restore-"), std::string::npos) << "staging dir left: " << name;
    }
  }

  // Refused by `backup restore` (recorded version), `init --from-backup` (before installing) and
  // `init --snapshot` of the same data as a plain file (the db tells the version).
  void expect_every_restore_refused(const Saved& s, const std::string& supported_path) {
    std::string data = dir_ / "refused-data";
    expect_refused(cli(restore_args(s.store, data, free_port())), supported_path, {data});

    std::string root = dir_ / "refused-init";
    auto init = init_args(root);
    init.insert(init.end(), {"--from-backup", "latest", "--store", s.store});
    expect_refused(cli(init), supported_path, {root + "/bin", root + "/pki", root + "/conf", root + "/data"});

    auto from_file = init_args(root);
    from_file.insert(from_file.end(), {"--snapshot", s.snapshot_file});
    expect_refused(cli(from_file), supported_path, {root + "/bin", root + "/pki", root + "/conf", root + "/data"});

    // An import without --etcd-version: nothing recorded, the db's own meta keys decide.
    std::string unlabelled = dir_ / "store-unlabelled";
    ASSERT_EQ(cli({"backup", "import", s.snapshot_file, "--store", unlabelled}).exit_code, 0);
    expect_refused(cli(restore_args(unlabelled, data, free_port())), supported_path, {data});
    remove_all(unlabelled);
  }
};

}  // namespace

TEST_F(CrossVersion, ABackupOfThePreviousMinorRestoresAndThisEtcdStartsOnIt) {
  auto previous = neighbour(-1);
  if (!previous) ETCDADM_SKIP_BY_DESIGN() << "no etcd minor before " << etcd_under_test().minor << " is pinned";
  Saved s = backup_from(*previous);

  for (bool native : {true, false}) {
    SCOPED_TRACE(native ? "native" : "etcd's tool");
    EtcdOptions o;
    o.name = "r";
    o.peer_port = free_port();
    o.data_dir = dir_ / (native ? "restored-native" : "restored-tool");
    o.initial_cluster_token = "etcd-cluster";  // backup restore's default
    auto args = restore_args(s.store, o.data_dir, o.peer_port);
    if (!native) args.insert(args.end(), {"--restore-with", etcd_under_test().has_etcdutl() ? "etcdutl" : "etcdctl"});
    auto r = cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    if (native) {
      // The etcd first on PATH is the one under test: the data dir is written for it.
      EXPECT_NE(r.output.find("written natively for etcd " + etcd_under_test().version), std::string::npos) << r.output;
    } else {
      EXPECT_NE(r.output.find("restoring with " + etcd_under_test().snapshot_tool()), std::string::npos) << r.output;
    }
    EXPECT_NE(r.output.find("a one-minor upgrade"), std::string::npos) << r.output;

    auto& restored = start_member(o);
    EtcdClient c(restored.connection());
    EXPECT_EQ(c.status(restored.client_url()).version(), etcd_under_test().version);
    EXPECT_EQ(all_keys(c, s.revision), s.keys);
    EXPECT_EQ(c.hash_kv(restored.client_url(), s.revision).hash(), s.hash);
    c.put("/written/after/restore", "ok");  // a working member, not just a readable one
    restored.stop();
  }
}

TEST_F(CrossVersion, ANativeRestoreForTheNextMinorStartsThere) {
  auto next = neighbour(+1);
  if (!next) ETCDADM_SKIP_BY_DESIGN() << "no etcd minor after " << etcd_under_test().minor << " is pinned";
  Saved s = backup_from(etcd_under_test());
  EtcdOptions o;
  o.name = "r";
  o.etcd_binary = next->etcd();
  o.peer_port = free_port();
  o.data_dir = dir_ / "restored";
  o.initial_cluster_token = "etcd-cluster";
  auto args = restore_args(s.store, o.data_dir, o.peer_port);
  args.insert(args.end(), {"--target-version", next->version});
  auto r = cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("written natively for etcd " + next->version), std::string::npos) << r.output;
  auto& restored = start_member(o);
  EtcdClient c(restored.connection());
  EXPECT_EQ(c.status(restored.client_url()).version(), next->version);
  EXPECT_EQ(all_keys(c, s.revision), s.keys);
  EXPECT_EQ(c.hash_kv(restored.client_url(), s.revision).hash(), s.hash);
  c.put("/written/after/restore", "ok");
}

TEST_F(CrossVersion, NewerAndSkippedMinorsAreRefusedBeforeAnythingIsWritten) {
  auto next = neighbour(+1);
  auto two_back = neighbour(-2);
  if (!next && !two_back) ETCDADM_SKIP_BY_DESIGN() << "no newer or two-back etcd minor is pinned";
  if (next) {
    SCOPED_TRACE("a backup of etcd " + next->version);
    Saved s = backup_from(*next);
    expect_every_restore_refused(s, "restore with etcd " + next->minor + " or newer");
  }
  if (two_back) {
    SCOPED_TRACE("a backup of etcd " + two_back->version);
    Saved s = backup_from(*two_back);
    std::string between = "3." + std::to_string(two_back->minor_number() + 1);
    expect_every_restore_refused(s, "restore with etcd " + between);
  }
}

TEST_F(CrossVersion, TheRestoreToolMustBeTheTargetsOwn) {
  // Measured: etcd 3.6 panics ("failed to update; member unknown") on a 3.4 snapshot restored by
  // etcdctl 3.4, which writes the membership only where 3.5 still looks for it. (The native
  // restore writes it everywhere: ANativeRestoreForTheNextMinorStartsThere.)
  auto next = neighbour(+1);
  if (!next) ETCDADM_SKIP_BY_DESIGN() << "no etcd minor after " << etcd_under_test().minor << " is pinned";
  EtcdOptions o;
  o.name = "src";
  auto& m = start_member(o);
  EtcdClient client(m.connection());
  client.put("/k", "v");
  ASSERT_EQ(cli({"backup", "save", "--store", store_, "--endpoints", m.client_url()}).exit_code, 0);
  std::string data = dir_ / "data";
  auto args = restore_args(store_, data, free_port());
  args.insert(args.end(), {"--target-version", next->version, "--restore-with",
                           etcd_under_test().has_etcdutl() ? "etcdutl" : "etcdctl"});
  auto r = cli(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("the tool writes the data dir for its own version"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(next->minor + " first on PATH, or --restore-tool"), std::string::npos) << r.output;
  EXPECT_FALSE(path_exists(data));
}

}  // namespace etcdadm::test

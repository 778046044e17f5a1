// kops' etcd-manager as the oracle: its own etcd-manager-ctl (built from its source by
// scripts/go-test-tools.sh) lists the backups of stores etcdadm writes, and reads and writes the
// control files (cluster spec, command queue) that `etcdadm etcd-manager` reads and writes.
// etcd-manager lists a backup by its _etcd_backup.meta and, to restore it, first creates a new,
// empty cluster: it must list exactly the backups it can restore.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "common/fs.h"
#include "store/etcd_manager.h"
#include "store/layout.h"
#include "store/backend/local/local_store.h"
#include "test/support/cli_fixture.h"
#include "test/support/object_servers.h"

namespace etcdadm::test {

namespace {

class EtcdManagerCtl : public CliTest {
 protected:
  // etcd-manager-ctl's stdout (its log goes to stderr) for `args` on the store at `path`.
  ProcessResult ctl(const std::string& path, const std::vector<std::string>& args) {
    std::string cmd = "'" + go_test_tool("etcd-manager-ctl") + "' -backup-store 'file://" + path + "'";
    for (const auto& a : args) cmd += " '" + a + "'";
    return run_process({"sh", "-c", cmd + " 2>" + (dir_ / "ctl.log")});
  }
  // The backups etcd-manager-ctl lists (it prints one name per line after a header).
  std::set<std::string> ctl_backups(const std::string& path) {
    auto r = ctl(path, {"list-backups"});
    EXPECT_EQ(r.exit_code, 0) << r.output << read_file(dir_ / "ctl.log");
    std::set<std::string> out;
    static const std::regex name(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ-\d{6}$)");
    size_t pos = 0;
    while (pos < r.output.size()) {
      size_t end = r.output.find('\n', pos);
      std::string line = r.output.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      if (std::regex_match(line, name)) out.insert(line);
      if (end == std::string::npos) break;
      pos = end + 1;
    }
    return out;
  }
  std::set<std::string> etcdadm_backups(const std::string& path) {
    std::set<std::string> out;
    for (const auto& b : cli_json({"backup", "list", "--store", path, "-o", "json"})) out.insert(b["backup"].get<std::string>());
    return out;
  }
  // etcd-manager's protojson writer adds a second space after some colons at random (fixed per
  // binary): what it wrote, in the one-space form jsonpb writes and etcdadm writes.
  static std::string one_space(std::string s) {
    for (size_t at; (at = s.find(":  ")) != std::string::npos;) s.erase(at + 1, 1);
    return s;
  }
  // etcd-manager-ctl restores 3.0 to 3.6 (pkg/etcdversions): 3.7 backups are not for it.
  static bool etcd_manager_restores_this_version() { return !etcd_under_test().at_least("3.7"); }
};

}  // namespace

TEST_F(EtcdManagerCtl, ListsExactlyTheBackupsItCouldRestore) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 100, 200);
  std::string gz = save(m)["backup"];
  std::string snap = dir_ / "etcdctl.db";
  etcdctl_snapshot(m, snap);
  std::string unversioned = cli_json({"--log-level", "warn", "backup", "import", snap, "--store", store_, "-o", "json"})["backup"];
  std::string versioned = cli_json({"--log-level", "warn", "backup", "import", snap, "--store", store_, "--etcd-version",
                                    etcd_under_test().version, "-o", "json"})["backup"];
  // A db copied out of a data dir has no SHA-256 trailer: etcd-manager's restore would refuse it.
  std::string db = dir_ / "no-trailer.db";
  write_file_atomic(db, read_file(snap).substr(0, std::filesystem::file_size(snap) - 32), 0600);
  std::string trailerless = cli_json({"--log-level", "warn", "backup", "import", db, "--store", store_, "--etcd-version",
                                      etcd_under_test().version, "--skip-hash-check", "-o", "json"})["backup"];

  std::set<std::string> restorable;
  if (etcd_manager_restores_this_version()) restorable = {gz, versioned};
  EXPECT_EQ(ctl_backups(store_), restorable);
  EXPECT_EQ(etcdadm_backups(store_), (std::set<std::string>{gz, unversioned, versioned, trailerless}));
  EXPECT_EQ(read_store_settings(*std::make_unique<LocalStore>(store_))->layout_version, kEtcdadmOnlyBackupsLayoutVersion)
      << "backups without _etcd_backup.meta need layout 3, which etcdadm before it refuses";
  // etcdadm's view of what etcd-manager lists agrees with etcd-manager's own.
  std::set<std::string> ours;
  for (const auto& b : cli_json({"etcd-manager", "list-backups", "--store", store_, "-o", "json"})) {
    EXPECT_TRUE(b["restorable"].get<bool>()) << b.dump();
    ours.insert(b["backup"].get<std::string>());
  }
  EXPECT_EQ(ours, restorable);

  // A zstd store: etcd-manager sees nothing, etcdadm everything, and restores it.
  std::string zstd_store = dir_ / "zstd";
  std::string zst = cli_json({"--log-level", "warn", "backup", "save", "--store", zstd_store, "--endpoints", m.client_url(),
                              "--compression", "zstd", "-o", "json"})["backup"];
  EXPECT_EQ(ctl_backups(zstd_store), std::set<std::string>{});
  EXPECT_EQ(etcdadm_backups(zstd_store), std::set<std::string>{zst});
  auto r = cli({"backup", "restore", zst, "--store", zstd_store, "--output-file", dir_ / "zst.db"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(EtcdManagerCtl, ControlFilesRoundTripAndOnlyRestorableIntactBackupsAreQueued) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/secrets/", 50, 300);
  std::string name = save(m)["backup"];
  std::string snap = dir_ / "etcdctl.db";
  etcdctl_snapshot(m, snap);
  std::string unversioned = cli_json({"--log-level", "warn", "backup", "import", snap, "--store", store_, "-o", "json"})["backup"];

  // No spec yet: both tools say so.
  EXPECT_NE(ctl(store_, {"get"}).exit_code, 0);
  EXPECT_EQ(cli({"etcd-manager", "get", "--store", store_}).exit_code, 3);
  auto refused = cli({"etcd-manager", "restore-backup", name, "--store", store_});
  EXPECT_EQ(refused.exit_code, 3) << refused.output;
  EXPECT_NE(refused.output.find("no etcd-manager cluster spec"), std::string::npos) << refused.output;

  // The cluster spec, written by one tool, read by the other, byte for byte.
  ASSERT_EQ(cli({"etcd-manager", "configure-cluster", "--store", store_, "--member-count", "3", "--etcd-version", "3.5.30"}).exit_code, 0);
  auto got = ctl(store_, {"get"});
  EXPECT_NE(got.output.find("member_count:3"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("etcd_version:\"3.5.30\""), std::string::npos) << got.output;
  ASSERT_EQ(ctl(store_, {"-member-count", "5", "configure-cluster"}).exit_code, 0);
  auto spec = cli_json({"etcd-manager", "get", "--store", store_, "-o", "json"});
  EXPECT_EQ(spec["memberCount"], 5);
  EXPECT_EQ(spec["etcdVersion"], "3.5.30");
  EXPECT_EQ(one_space(read_file(store_ + "/control/etcd-cluster-spec")), etcd_manager_cluster_spec_json({5, "3.5.30"}));

  // A backup etcd-manager could not restore is refused, with nothing queued.
  refused = cli({"etcd-manager", "restore-backup", unversioned, "--store", store_});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("no etcd version"), std::string::npos) << refused.output;
  EXPECT_TRUE(cli_json({"etcd-manager", "list-commands", "--store", store_, "-o", "json"}).empty());
  if (!etcd_manager_restores_this_version()) {
    refused = cli({"etcd-manager", "restore-backup", name, "--store", store_});
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find("3.0 to 3.6 only"), std::string::npos) << refused.output;
    return;
  }

  // etcdadm queues a restore; etcd-manager-ctl reads it. Its own command for the same backup has
  // the same bytes but for the timestamp.
  auto queued = cli({"etcd-manager", "restore-backup", name, "--store", store_});
  ASSERT_EQ(queued.exit_code, 0) << queued.output;
  EXPECT_NE(queued.output.find("verified intact"), std::string::npos) << queued.output;
  EXPECT_NE(queued.output.find("restart etcd-manager"), std::string::npos) << queued.output;
  auto listed = ctl(store_, {"list-commands"});
  EXPECT_NE(listed.output.find("backup:\"" + name + "\""), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("member_count:5"), std::string::npos) << listed.output;
  auto ours = list_etcd_manager_commands(*std::make_unique<LocalStore>(store_));
  ASSERT_EQ(ours.size(), 1u);
  std::string our_bytes = read_file(store_ + "/" + ours[0].key);
  EXPECT_EQ(cli({"etcd-manager", "restore-backup", name, "--store", store_}).exit_code, 4) << "one restore at a time";
  ASSERT_EQ(cli({"etcd-manager", "delete-command", name, "--store", store_}).exit_code, 0);
  EXPECT_EQ(ctl(store_, {"list-commands"}).output.find("restore_backup"), std::string::npos);

  ASSERT_EQ(ctl(store_, {"restore-backup", name}).exit_code, 0);
  auto theirs = cli_json({"etcd-manager", "list-commands", "--store", store_, "-o", "json"});
  ASSERT_EQ(theirs.size(), 1u);
  EXPECT_EQ(theirs[0]["restoreBackup"]["backup"], name);
  EXPECT_EQ(theirs[0]["restoreBackup"]["clusterSpec"]["memberCount"], 5);
  auto their_cmd = list_etcd_manager_commands(*std::make_unique<LocalStore>(store_));
  ASSERT_EQ(their_cmd.size(), 1u);
  std::string their_bytes = one_space(read_file(store_ + "/" + their_cmd[0].key));
  auto with_timestamp = [](const std::string& json, int64_t ts) {
    return std::regex_replace(json, std::regex(R"("timestamp": "\d+")"), "\"timestamp\": \"" + std::to_string(ts) + "\"");
  };
  EXPECT_EQ(with_timestamp(our_bytes, 1), with_timestamp(their_bytes, 1));
  EXPECT_EQ(cli({"etcd-manager", "check", "--store", store_}).exit_code, 0);
  ASSERT_EQ(cli({"etcd-manager", "delete-command", their_cmd[0].key, "--store", store_}).exit_code, 0);

  // A damaged backup is found before anything is queued, and recorded.
  std::string data = store_ + "/" + name + "/etcd.backup.gz";
  std::string bytes = read_file(data);
  bytes[bytes.size() / 2] ^= 0x20;
  write_file_atomic(data, bytes, 0600);
  refused = cli({"etcd-manager", "restore-backup", name, "--store", store_});
  EXPECT_EQ(refused.exit_code, 5) << refused.output;
  EXPECT_EQ(ctl(store_, {"list-commands"}).output.find("restore_backup"), std::string::npos);
  auto seen = cli_json({"etcd-manager", "list-backups", "--store", store_, "-o", "json"});
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0]["reason"].get<std::string>().find("damaged"), std::string::npos) << seen.dump();
}

// A store written before the rule: a zstd backup with _etcd_backup.meta, as etcdadm wrote it then.
// etcd-manager lists it; `check` says so and fails; `check --fix` takes it off etcd-manager's list,
// and etcdadm still lists and restores it.
// `etcdadm seed` writes the spec where and as etcd-manager reads it, and reads back what
// etcd-manager-ctl configure-cluster wrote: the controllers obey either tool.
TEST_F(EtcdManagerCtl, SeedWritesTheSpecItReadsAndReadsWhatItWrites) {
  auto none = cli({"seed", "--store", store_, "--members", "3"});
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("give both --members and --version"), std::string::npos) << none.output;
  auto dry = cli_json({"seed", "--store", store_, "--members", "3", "--version", "3.5.30", "--dry-run", "-o", "json"});
  EXPECT_TRUE(dry["dryRun"].get<bool>());
  EXPECT_TRUE(dry["before"].is_null());
  EXPECT_NE(dry["effect"].get<std::string>().find("once 2 of 3 hosts run `etcdadm auto`"), std::string::npos) << dry.dump();
  EXPECT_NE(ctl(store_, {"get"}).exit_code, 0) << "a dry run writes nothing";

  ASSERT_EQ(cli({"seed", "--store", store_, "--members", "3", "--version", "3.5.30", "--replace-after", "5m"}).exit_code, 0);
  auto got = ctl(store_, {"get"});
  EXPECT_NE(got.output.find("member_count:3"), std::string::npos) << got.output;
  EXPECT_NE(got.output.find("etcd_version:\"3.5.30\""), std::string::npos) << got.output;
  ASSERT_EQ(ctl(store_, {"-member-count", "5", "configure-cluster"}).exit_code, 0);
  auto seen = cli_json({"seed", "--store", store_, "--version", "3.5.31", "--dry-run", "-o", "json"});
  EXPECT_EQ(seen["before"]["memberCount"], 5);
  EXPECT_EQ(seen["after"]["memberCount"], 5);
  EXPECT_EQ(seen["after"]["etcdVersion"], "3.5.31");
  EXPECT_EQ(seen["replaceAfterSeconds"], 300);
}

TEST_F(EtcdManagerCtl, CheckFixTakesAnOlderStoresHazardsOffItsList) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/configmaps/", 50, 300);
  std::string name = save(m, {"--compression", "zstd"})["backup"];
  LocalStore store(store_);
  store.write_small(kStoreMarkerFile, R"({"layoutVersion":1,"compression":"zstd","fileMode":"0600"})", true);
  store.write_small(name + "/" + kEtcdManagerMetaFile, etcd_manager_meta_json("3.5.30", 1795581998, 1));
  EXPECT_EQ(ctl_backups(store_), std::set<std::string>{name});

  auto check = cli({"etcd-manager", "check", "--store", store_});
  EXPECT_EQ(check.exit_code, 5) << check.output;
  EXPECT_NE(check.output.find("etcd.backup.zst"), std::string::npos) << check.output;
  auto fixed = cli({"etcd-manager", "check", "--store", store_, "--fix"});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.output;
  EXPECT_EQ(ctl_backups(store_), std::set<std::string>{});
  EXPECT_EQ(etcdadm_backups(store_), std::set<std::string>{name});
  EXPECT_EQ(read_store_settings(store)->layout_version, kEtcdadmOnlyBackupsLayoutVersion);
  auto r = cli({"backup", "restore", name, "--store", store_, "--output-file", dir_ / "fixed.db"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(cli({"etcd-manager", "check", "--store", store_}).exit_code, 0);
}

}  // namespace etcdadm::test

// kops' etcd-manager stores, checked against the facts of its format that docs/store-format.md
// records (§4.3 `_etcd_backup.meta` and the etcd-manager rule, §10 the control files): which
// backups etcd-manager lists (every directory holding `_etcd_backup.meta`), that it lists exactly
// those it could restore, and the control files (cluster spec, command queue) byte for byte as its
// jsonpb writer wrote them, with what its protojson writer writes (a second space after colons) read
// back. etcd-manager's own code is not run here: the Go module proxy does not serve it
// (docs/testing.md, "Outside oracles").
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "common/fs.h"
#include "etcdadm/pki.h"
#include "store/backend/local/local_store.h"
#include "store/etcd_manager.h"
#include "store/layout.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_manager_files.h"
#include "test/support/object_servers.h"

namespace etcdadm::test {

namespace {

class EtcdManagerStore : public CliTest {
 protected:
  std::set<std::string> etcdadm_backups(const std::string& path) {
    std::set<std::string> out;
    for (const auto& b : cli_json({"backup", "list", "--store", path, "-o", "json"})) out.insert(b["backup"].get<std::string>());
    return out;
  }
  // The restore commands queued in the store at `path`, as etcd-manager finds them: every
  // control/<dir>/_command.json, its directory named as §10 says.
  std::vector<std::pair<std::string, nlohmann::json>> queued(const std::string& path) {
    std::vector<std::pair<std::string, nlohmann::json>> out;
    static const std::regex dir_name(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ-000000$)");
    if (!path_exists(path + "/control")) return out;
    for (const auto& e : std::filesystem::directory_iterator(path + "/control")) {
      const std::string file = e.path() / "_command.json";
      if (!e.is_directory() || !path_exists(file)) continue;
      EXPECT_TRUE(std::regex_match(e.path().filename().string(), dir_name)) << e.path();
      out.emplace_back(e.path().filename().string(), nlohmann::json::parse(read_file(file)));
    }
    return out;
  }
  // etcd-manager restores 3.0 to 3.6 (store-format.md §4.3): 3.7 backups are not for it.
  static bool etcd_manager_restores_this_version() { return !etcd_under_test().at_least("3.7"); }
};

}  // namespace

TEST_F(EtcdManagerStore, ListsExactlyTheBackupsItCouldRestore) {
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
  // What etcd-manager lists is what it could restore, each by the documented rule.
  const auto listed = listed_by_etcd_manager(store_);
  EXPECT_EQ(listed, restorable);
  for (const auto& name : {gz, unversioned, versioned, trailerless}) {
    EXPECT_EQ(etcd_manager_could_restore(store_, name), restorable.count(name) > 0) << name;
  }
  EXPECT_EQ(etcdadm_backups(store_), (std::set<std::string>{gz, unversioned, versioned, trailerless}));
  EXPECT_EQ(read_store_settings(*std::make_unique<LocalStore>(store_))->layout_version, kEtcdadmOnlyBackupsLayoutVersion)
      << "backups without _etcd_backup.meta need layout 3, which etcdadm before it refuses";
  // etcdadm's view of what etcd-manager lists agrees with the documented one.
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
  EXPECT_EQ(listed_by_etcd_manager(zstd_store), std::set<std::string>{});
  EXPECT_EQ(etcdadm_backups(zstd_store), std::set<std::string>{zst});
  auto r = cli({"backup", "restore", zst, "--store", zstd_store, "--output-file", dir_ / "zst.db"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(EtcdManagerStore, ControlFilesRoundTripAndOnlyRestorableIntactBackupsAreQueued) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/secrets/", 50, 300);
  std::string name = save(m)["backup"];
  std::string snap = dir_ / "etcdctl.db";
  etcdctl_snapshot(m, snap);
  std::string unversioned = cli_json({"--log-level", "warn", "backup", "import", snap, "--store", store_, "-o", "json"})["backup"];

  // No spec yet.
  EXPECT_EQ(cli({"etcd-manager", "get", "--store", store_}).exit_code, 3);
  auto refused = cli({"etcd-manager", "restore-backup", name, "--store", store_});
  EXPECT_EQ(refused.exit_code, 3) << refused.output;
  EXPECT_NE(refused.output.find("no etcd-manager cluster spec"), std::string::npos) << refused.output;

  // The cluster spec: etcdadm writes what etcd-manager's jsonpb writer wrote (§10's known answer),
  // and reads what its protojson writer writes.
  ASSERT_EQ(cli({"etcd-manager", "configure-cluster", "--store", store_, "--member-count", "3", "--etcd-version", "3.5.30"}).exit_code, 0);
  EXPECT_EQ(read_file(store_ + "/control/etcd-cluster-spec"), "{\n  \"memberCount\": 3,\n  \"etcdVersion\": \"3.5.30\"\n}");
  write_spec_as_etcd_manager(store_, 5, "3.5.30");
  auto spec = cli_json({"etcd-manager", "get", "--store", store_, "-o", "json"});
  EXPECT_EQ(spec["memberCount"], 5);
  EXPECT_EQ(spec["etcdVersion"], "3.5.30");

  // A backup etcd-manager could not restore is refused, with nothing queued.
  refused = cli({"etcd-manager", "restore-backup", unversioned, "--store", store_});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("no etcd version"), std::string::npos) << refused.output;
  EXPECT_TRUE(cli_json({"etcd-manager", "list-commands", "--store", store_, "-o", "json"}).empty());
  EXPECT_TRUE(queued(store_).empty());
  if (!etcd_manager_restores_this_version()) {
    refused = cli({"etcd-manager", "restore-backup", name, "--store", store_});
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find("3.0 to 3.6 only"), std::string::npos) << refused.output;
    return;
  }

  // etcdadm queues a restore where and as etcd-manager reads one: §10's directory name, and the
  // known answer's bytes but for the timestamp (unix nanoseconds, a string).
  const auto before = std::chrono::system_clock::now();
  auto accepted = cli({"etcd-manager", "restore-backup", name, "--store", store_});
  ASSERT_EQ(accepted.exit_code, 0) << accepted.output;
  EXPECT_NE(accepted.output.find("verified intact"), std::string::npos) << accepted.output;
  EXPECT_NE(accepted.output.find("restart etcd-manager"), std::string::npos) << accepted.output;
  auto ours = queued(store_);
  ASSERT_EQ(ours.size(), 1u);
  const std::string our_bytes = read_file(store_ + "/control/" + ours[0].first + "/_command.json");
  static const std::regex timestamp(R"re("timestamp": "(\d+)")re");
  std::smatch stamp;
  ASSERT_TRUE(std::regex_search(our_bytes, stamp, timestamp)) << our_bytes;
  const int64_t nanos = std::stoll(stamp[1]);
  EXPECT_GE(nanos, std::chrono::duration_cast<std::chrono::nanoseconds>(before.time_since_epoch()).count() / 1000000000 * 1000000000);
  EXPECT_EQ(our_bytes, "{\n  \"timestamp\": \"" + std::to_string(nanos) +
                           "\",\n  \"restoreBackup\": {\n    \"clusterSpec\": {\n      \"memberCount\": 5,\n"
                           "      \"etcdVersion\": \"3.5.30\"\n    },\n    \"backup\": \"" + name + "\"\n  }\n}");
  {
    // The directory is named after the same second as the timestamp, in UTC.
    const std::time_t seconds = nanos / 1000000000;
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char expected[32];
    std::strftime(expected, sizeof expected, "%Y-%m-%dT%H:%M:%SZ-000000", &utc);
    EXPECT_EQ(ours[0].first, expected);
  }
  EXPECT_EQ(cli({"etcd-manager", "restore-backup", name, "--store", store_}).exit_code, 4) << "one restore at a time";
  ASSERT_EQ(cli({"etcd-manager", "delete-command", name, "--store", store_}).exit_code, 0);
  EXPECT_TRUE(queued(store_).empty());

  // A command as etcd-manager-ctl queues one (protojson's form) is read, checked and deleted.
  const std::string theirs_dir = queue_restore_as_etcd_manager(store_, name, 5, "3.5.30");
  auto theirs = cli_json({"etcd-manager", "list-commands", "--store", store_, "-o", "json"});
  ASSERT_EQ(theirs.size(), 1u);
  EXPECT_EQ(theirs[0]["restoreBackup"]["backup"], name);
  EXPECT_EQ(theirs[0]["restoreBackup"]["clusterSpec"]["memberCount"], 5);
  EXPECT_EQ(theirs[0]["restoreBackup"]["clusterSpec"]["etcdVersion"], "3.5.30");
  EXPECT_EQ(cli({"etcd-manager", "check", "--store", store_}).exit_code, 0);
  ASSERT_EQ(cli({"etcd-manager", "delete-command", "control/" + theirs_dir + "/_command.json", "--store", store_}).exit_code, 0);
  EXPECT_TRUE(queued(store_).empty());

  // A damaged backup is found before anything is queued, and recorded.
  std::string data = store_ + "/" + name + "/etcd.backup.gz";
  std::string bytes = read_file(data);
  bytes[bytes.size() / 2] ^= 0x20;
  write_file_atomic(data, bytes, 0600);
  refused = cli({"etcd-manager", "restore-backup", name, "--store", store_});
  EXPECT_EQ(refused.exit_code, 5) << refused.output;
  EXPECT_TRUE(queued(store_).empty());
  auto seen = cli_json({"etcd-manager", "list-backups", "--store", store_, "-o", "json"});
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0]["reason"].get<std::string>().find("damaged"), std::string::npos) << seen.dump();
}

// `etcdadm seed` writes the spec where and as etcd-manager reads it (§10), and reads back a spec
// etcd-manager-ctl configure-cluster wrote (protojson's form): the controllers obey either tool.
TEST_F(EtcdManagerStore, SeedWritesTheSpecItReadsAndReadsWhatItWrites) {
  auto none = cli({"seed", "--store", store_, "--members", "3"});
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("give both --members and --version"), std::string::npos) << none.output;
  auto dry = cli_json({"seed", "--store", store_, "--members", "3", "--version", "3.5.30", "--dry-run", "-o", "json"});
  EXPECT_TRUE(dry["dryRun"].get<bool>());
  EXPECT_TRUE(dry["before"].is_null());
  EXPECT_NE(dry["effect"].get<std::string>().find("once 2 of 3 hosts run `etcdadm auto`"), std::string::npos) << dry.dump();
  EXPECT_FALSE(path_exists(store_ + "/control/etcd-cluster-spec")) << "a dry run writes nothing";

  // Written only where the cluster's CA key is: the controllers obey a spec their CA signed.
  auto unsigned_seed = cli({"seed", "--store", store_, "--members", "3", "--version", "3.5.30", "--certs-dir", dir_ / "none"});
  EXPECT_EQ(unsigned_seed.exit_code, 3) << unsigned_seed.output;
  EXPECT_NE(unsigned_seed.output.find("signs the spec with the cluster CA's key"), std::string::npos)
      << unsigned_seed.output;
  EXPECT_FALSE(path_exists(store_ + "/control/etcd-cluster-spec")) << "nothing written without the key";
  ensure_ca(dir_ / "pki");
  ASSERT_EQ(cli({"seed", "--store", store_, "--members", "3", "--version", "3.5.30", "--replace-after", "5m",
                 "--certs-dir", dir_ / "pki"})
                .exit_code,
            0);
  EXPECT_EQ(read_file(store_ + "/control/etcd-cluster-spec"), "{\n  \"memberCount\": 3,\n  \"etcdVersion\": \"3.5.30\"\n}");
  write_spec_as_etcd_manager(store_, 5, "3.5.30");
  auto seen = cli_json({"seed", "--store", store_, "--version", "3.5.31", "--dry-run", "-o", "json"});
  EXPECT_EQ(seen["before"]["memberCount"], 5);
  EXPECT_EQ(seen["after"]["memberCount"], 5);
  EXPECT_EQ(seen["after"]["etcdVersion"], "3.5.31");
  EXPECT_EQ(seen["replaceAfterSeconds"], 300);
}

// A store written before the rule: a zstd backup with _etcd_backup.meta, as etcdadm wrote it then.
// etcd-manager lists it; `check` says so and fails; `check --fix` takes it off etcd-manager's list,
// and etcdadm still lists and restores it.
TEST_F(EtcdManagerStore, CheckFixTakesAnOlderStoresHazardsOffItsList) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/configmaps/", 50, 300);
  std::string name = save(m, {"--compression", "zstd"})["backup"];
  LocalStore store(store_);
  store.write_small(kStoreMarkerFile, R"({"layoutVersion":1,"compression":"zstd","fileMode":"0600"})", true);
  store.write_small(name + "/" + kEtcdManagerMetaFile, etcd_manager_meta_json("3.5.30", 1795581998, 1));
  EXPECT_EQ(listed_by_etcd_manager(store_), std::set<std::string>{name});
  EXPECT_FALSE(etcd_manager_could_restore(store_, name));

  auto check = cli({"etcd-manager", "check", "--store", store_});
  EXPECT_EQ(check.exit_code, 5) << check.output;
  EXPECT_NE(check.output.find("etcd.backup.zst"), std::string::npos) << check.output;
  auto fixed = cli({"etcd-manager", "check", "--store", store_, "--fix"});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.output;
  EXPECT_EQ(listed_by_etcd_manager(store_), std::set<std::string>{});
  EXPECT_EQ(etcdadm_backups(store_), std::set<std::string>{name});
  EXPECT_EQ(read_store_settings(store)->layout_version, kEtcdadmOnlyBackupsLayoutVersion);
  auto r = cli({"backup", "restore", name, "--store", store_, "--output-file", dir_ / "fixed.db"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(cli({"etcd-manager", "check", "--store", store_}).exit_code, 0);
}

}  // namespace etcdadm::test

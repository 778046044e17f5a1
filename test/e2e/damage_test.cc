// A backup found damaged is remembered (a marker in the store, the catalog), shown in `backup list`,
// skipped by `latest` with a warning naming it, and the failure names the next intact candidate with
// the exact command for it. A verification that passes again clears the record.
#include <gtest/gtest.h>

#include <sstream>

#include "common/fs.h"
#include "restore/damage.h"
#include "restore/fetch.h"
#include "store/backend/local/local_store.h"
#include "store/backend/object/streaming_reader.h"
#include "store/catalog.h"
#include "store/layout.h"
#include "test/support/cli_fixture.h"

namespace etcdadm::test {
namespace {

class Damage : public CliTest {};

// A store that, opening a backup's data file, announces a size of its own instead of the object's
// (a gateway or proxy answering HEAD wrongly) and streams it through the object stores' reader, which ends the
// download at the announced size; its listing stays right.
class MisreportingStore : public LocalStore {
 public:
  MisreportingStore(std::string root, std::optional<uint64_t> announced) : LocalStore(root), root_(root), announced_(announced) {}
  std::unique_ptr<BlobReader> open(const std::string& key) override {
    if (key.find("/etcd.backup") == std::string::npos) return LocalStore::open(key);
    ++opens;
    if (!announced_) return LocalStore::open(key);
    auto bytes = std::make_shared<std::string>(read_file(root_ + "/" + key));
    return std::make_unique<StreamingReader>(root_ + "/" + key, *announced_, RetryPolicy{},
                                             [bytes](uint64_t offset, const HttpBodySink& sink) {
                                               if (offset < bytes->size()) sink(bytes->data() + offset, bytes->size() - offset);
                                             });
  }
  int opens = 0;  // of the data file

 private:
  std::string root_;
  std::optional<uint64_t> announced_;
};

TEST_F(Damage, LatestSkipsARecordedDamagedBackupAndTheErrorNamesTheNext) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 200, 500, 3);
  std::string older = save(m)["backup"];
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // names have one-second resolution
  client.put("/registry/pods/newer", "x");
  std::string newest = save(m)["backup"];
  std::string data = store_ + "/" + newest + "/etcd.backup.gz";
  std::string good = read_file(data);
  std::string bad = good;
  bad[bad.size() / 2] ^= 0x20;
  write_file_atomic(data, bad);

  // The failure says what to do next, as a command that works as printed.
  std::string out = dir_ / "snap.db";
  auto r = cli({"backup", "restore", "latest", "--store", store_, "--output", out});
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_FALSE(path_exists(out));
  std::string expected = "etcdadm backup restore " + older + " --store " + store_ + " --output " + out;
  EXPECT_NE(r.output.find("The next candidate is " + older), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  EXPECT_TRUE(path_exists(store_ + "/" + newest + "/etcdadm-damage.json")) << "the store records the damage";

  // Listed as damaged, in the table and in JSON.
  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0]["backup"], newest);
  EXPECT_EQ(listed[0]["status"], "damaged");
  EXPECT_NE(listed[0]["damaged"]["reason"].get<std::string>().find("SHA-256"), std::string::npos) << listed[0];
  EXPECT_TRUE(listed[0]["damaged"]["inStore"].get<bool>());
  EXPECT_TRUE(listed[1]["damaged"].is_null());
  auto table = cli({"backup", "list", "--store", store_});
  EXPECT_NE(table.output.find("DAMAGED"), std::string::npos) << table.output;

  // Another host (a fresh catalog) sees the store's marker: `latest` is the older backup, and the
  // skip is said, never silent.
  RunOptions other_host;
  other_host.env["ETCDADM_CATALOG"] = dir_ / "other-host.db";
  auto again = run_etcdadm({"backup", "restore", "latest", "--store", store_, "--output", out}, dir_ / "other-host.db",
                           other_host);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("latest: skipping backup " + newest), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("Fetched backup " + older), std::string::npos) << again.output;
  ::unlink(out.c_str());
  // The printed command works as printed.
  auto printed = run_process({"sh", "-c", expected.replace(0, 7, ETCDADM_BIN)}, [&] {
    RunOptions ro;
    ro.env["ETCDADM_CATALOG"] = dir_ / "catalog.db";
    return ro;
  }());
  EXPECT_EQ(printed.exit_code, 0) << printed.output;
  EXPECT_TRUE(path_exists(out));

  // Repaired (say, copied back from a second store): a full verification clears the record.
  write_file_atomic(data, good);
  auto verified = cli({"backup", "verify", newest, "--store", store_});
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  EXPECT_FALSE(path_exists(store_ + "/" + newest + "/etcdadm-damage.json"));
  auto relisted = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  EXPECT_TRUE(relisted[0]["damaged"].is_null()) << relisted[0];
  auto latest = cli({"backup", "restore", "latest", "--store", store_, "--output", dir_ / "latest.db"});
  EXPECT_EQ(latest.exit_code, 0) << latest.output;
  EXPECT_NE(latest.output.find("Fetched backup " + newest), std::string::npos) << latest.output;
}

// Two directories named 2099-... holding `{}` as `_etcd_backup.meta` (a store's garbage, or a
// writer whose clock is wrong): `latest` passes over both and restores the real newest backup the
// first time, naming each (failed before: two failed restores, each recording one fake as damaged
// and naming the other as the next candidate); nothing is recorded against them; the list shows
// them apart, never aged "0s".
TEST_F(Damage, AStoresGarbageIsNeverLatest) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 50, 200, 3);
  const std::string real = save(m)["backup"];
  const std::vector<std::string> fakes = {"2099-01-01T00:00:00Z-000001", "2099-01-02T00:00:00Z-000001"};
  LocalStore store(store_);
  for (const auto& f : fakes) store.write_small(f + "/_etcd_backup.meta", "{}");
  // And one newer than the real one, dated now, whose metadata (the real one's) names a data file
  // its directory lacks.
  const std::string hollow = real.substr(0, real.size() - 6) + "999999";
  store.write_small(hollow + "/" + kBackupMetaFile, store.read_small(real + "/" + kBackupMetaFile));
  // etcd-manager's file ends a directory etcd-manager could restore (a backup of 3.5 or older).
  store.write_small(hollow + "/" + kEtcdManagerMetaFile, path_exists(store_ + "/" + real + "/" + kEtcdManagerMetaFile)
                                                             ? store.read_small(real + "/" + kEtcdManagerMetaFile)
                                                             : "{}");

  std::string out = dir_ / "snap.db";
  auto r = cli({"backup", "restore", "latest", "--store", store_, "--output", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Fetched backup " + real), std::string::npos) << r.output;
  for (const auto& f : fakes) {
    EXPECT_NE(r.output.find("latest: skipping backup " + f + ": its metadata names no data file"), std::string::npos)
        << r.output;
    EXPECT_FALSE(path_exists(store_ + "/" + f + "/etcdadm-damage.json")) << "garbage is no damaged backup: " << f;
  }
  auto table = cli({"backup", "list", "--store", store_});
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(r.output.find("latest: skipping backup " + hollow + ": its metadata names no data file"), std::string::npos)
      << r.output;
  EXPECT_NE(table.output.find("3 that are no backup to restore (`latest` skips them):"), std::string::npos)
      << table.output;
  std::istringstream lines(table.output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("2099")) continue;
    EXPECT_NE(line.find(" future "), std::string::npos) << line;
    EXPECT_NE(line.find("NO DATA"), std::string::npos) << line;
    EXPECT_EQ(line.find(" 0s "), std::string::npos) << line;
  }
}

// A store announcing 0 bytes (or too few) for an intact backup is asked again, then reported as
// misbehaving: nothing read, no damage marker, the backup still `latest`. An object that really
// is shorter than its record (listed so) is damaged, and marked.
TEST_F(Damage, AStoreMisreportingTheSizeIsReportedNotTheBackupMarkedDamaged) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 50, 500, 3);
  const std::string name = save(m)["backup"];
  const std::string data = store_ + "/" + name + "/etcd.backup.gz";
  const uint64_t size = read_file(data).size();
  Catalog catalog(dir_ / "in-process.db");
  for (const uint64_t announced : {uint64_t{0}, size / 2}) {
    MisreportingStore store(store_, announced);
    const BackupRecord b = load_backup_record(store, scan_backups(store).at(0));
    ASSERT_EQ(b.stored_size, size);
    try {
      with_damage_recorded(store, catalog, b, [&] { verify_backup(BackupStore(store), b); }, nullptr);
      ADD_FAILURE() << "a store announcing " << announced << " of " << size << " bytes went unnoticed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnavailable) << e.what();
      const std::string text = e.what();
      EXPECT_NE(text.find("misbehaves"), std::string::npos) << text;
      EXPECT_NE(text.find("holds " + std::to_string(announced) + " bytes, but it lists it with " + std::to_string(size)), std::string::npos) << text;
      EXPECT_NE(text.find("not marked damaged"), std::string::npos) << text;
    }
    EXPECT_EQ(store.opens, 4) << "asked again three times";
    EXPECT_FALSE(path_exists(store_ + "/" + name + "/" + kDamageMarkerFile));
  }
  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0]["damaged"].is_null()) << listed[0];
  MisreportingStore honest(store_, std::nullopt);
  const BackupRecord b = load_backup_record(honest, scan_backups(honest).at(0));
  EXPECT_EQ(verify_backup(BackupStore(honest), b).stored_bytes, size);

  // Really truncated (and listed so): damage, marked in the store.
  ASSERT_EQ(::truncate(data.c_str(), static_cast<off_t>(size / 2)), 0) << data;
  try {
    with_damage_recorded(honest, catalog, b, [&] { verify_backup(BackupStore(honest), b); }, nullptr);
    ADD_FAILURE() << "a truncated backup verified";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << e.what();
  }
  EXPECT_TRUE(path_exists(store_ + "/" + name + "/" + kDamageMarkerFile));
}

}  // namespace
}  // namespace etcdadm::test

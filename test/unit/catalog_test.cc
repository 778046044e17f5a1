#include <gtest/gtest.h>

#include <atomic>

#include <mutex>

#include <thread>

#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fs.h"
#include <sqlite3.h>

#include "common/timefmt.h"
#include "store/blob_capabilities.h"
#include "store/catalog.h"
#include "store/etcd_manager.h"
#include "store/backend/local/local_store.h"
#include "test/support/blob_store_contract.h"
#include "test/support/test_env.h"

namespace etcdadm {

// Writes a minimal complete backup directory the way etcd-manager would.
static void add_etcd_manager_backup(LocalStore& store, const std::string& name, int64_t ts) {
  store.write_small(name + "/etcd.backup.gz", "not really gzip");
  store.write_small(name + "/_etcd_backup.meta", etcd_manager_meta_json("3.4.13", ts, 3));
}

// user_cache_dir()'s last resort, /tmp/etcdadm-cache-<uid>, is a name anyone can create first: a
// catalog or a release cache in it is refused unless it is this user's private directory, and
// created 0700 when missing. (Before the fix, a world-writable one or another user's was used.)
TEST(CacheDir, TheTmpFallbackMustBeThisUsersPrivateDirectory) {
  const std::string fallback = "/tmp/etcdadm-cache-" + std::to_string(::geteuid());
  std::filesystem::remove_all(fallback);
  auto refused = [&](const std::string& why) {
    try {
      Catalog c(fallback + "/catalog.db");
      ADD_FAILURE() << "a catalog was opened in a cache dir that is " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
    EXPECT_THROW(check_cache_dir(fallback), Error) << why;
  };
  ASSERT_EQ(::mkdir(fallback.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(fallback.c_str(), 0777), 0);
  refused("open to group or others");
  ASSERT_EQ(::chmod(fallback.c_str(), 0700), 0);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(fallback.c_str(), 65534, 65534), 0);
    refused("owned by uid 65534");
  }
  std::filesystem::remove_all(fallback);
  test::TempDir elsewhere;
  std::filesystem::create_directory_symlink(elsewhere.path(), fallback);
  refused("a symbolic link");
  std::filesystem::remove(fallback);
  // Missing: made private, and used.
  { Catalog c(fallback + "/catalog.db"); }
  struct stat st {};
  ASSERT_EQ(::lstat(fallback.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // Other directories are not this rule's business.
  EXPECT_NO_THROW(check_cache_dir(elsewhere.path()));
  std::filesystem::remove_all(fallback);
}

TEST(Catalog, SyncsIncrementallyAndRebuilds) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  add_etcd_manager_backup(store, "2026-01-01T00:00:00Z-000001", 1767225600);
  add_etcd_manager_backup(store, "2026-01-02T00:00:00Z-000001", 1767312000);
  store.write_small("2026-01-03T00:00:00Z-000001/etcd.backup.gz", "incomplete: no meta");

  Catalog cat(dir / "catalog.db");
  auto s1 = cat.sync(store);
  EXPECT_EQ(s1.added, 2);
  auto list = cat.backups(store.url());
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "2026-01-02T00:00:00Z-000001");  // newest first
  EXPECT_EQ(list[0].format, "etcd-manager");
  EXPECT_EQ(list[0].etcd_version, "3.4.13");

  auto s2 = cat.sync(store, SyncDepth::kFull);
  EXPECT_EQ(s2.added, 0);
  EXPECT_EQ(s2.unchanged, 2);

  store.remove("2026-01-01T00:00:00Z-000001/_etcd_backup.meta");
  store.remove("2026-01-01T00:00:00Z-000001/etcd.backup.gz");
  // A day older than the newest: only a full listing sees it gone (IncrementalSync... below).
  auto s3 = cat.sync(store, SyncDepth::kFull);
  EXPECT_EQ(s3.removed, 1);
  EXPECT_EQ(cat.backups(store.url()).size(), 1u);

  // A fresh catalog file rebuilds the same view from the store alone.
  Catalog fresh(dir / "other.db");
  fresh.rebuild(store);
  EXPECT_EQ(fresh.backups(store.url()).size(), 1u);
}

// A complete backup whose metadata is garbage is listed as damaged (never silently absent), and is
// not re-read at every sync.
TEST(Catalog, UnreadableMetadataIsListedAsDamaged) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  add_etcd_manager_backup(store, "2026-01-01T00:00:00Z-000001", 1767225600);
  store.write_small("2026-01-02T00:00:00Z-000001/etcd.backup.gz", "x");
  store.write_small("2026-01-02T00:00:00Z-000001/_etcd_backup.meta", "{garbage");
  Catalog cat(":memory:");
  auto s = cat.sync(store);
  EXPECT_EQ(s.added, 1);
  EXPECT_EQ(s.unreadable, 1);
  auto list = cat.backups(store.url());
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].format, kUnreadableFormat);
  ASSERT_TRUE(list[0].damage.has_value());
  EXPECT_NE(list[0].damage->reason.find("metadata unreadable"), std::string::npos) << list[0].damage->reason;
  EXPECT_FALSE(list[1].damage.has_value());
  EXPECT_EQ(cat.sync(store, SyncDepth::kFull).unchanged, 2);
}

// Damage found by another host reaches this catalog through the store's marker; a marker removed
// by a later verification clears it; damage only this catalog knows (no marker) is kept.
// Two etcd-manager backups, 2026-01-01 and 2026-01-02, in `store`, synced into `cat`.
static void two_synced_backups(LocalStore& store, Catalog& cat) {
  add_etcd_manager_backup(store, "2026-01-01T00:00:00Z-000001", 1767225600);
  add_etcd_manager_backup(store, "2026-01-02T00:00:00Z-000001", 1767312000);
  cat.sync(store);
}

TEST(Catalog, DamageMarkersAreSyncedBothWays) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  Catalog cat(":memory:");
  two_synced_backups(store, cat);
  DamageRecord d{1767400000000000, "stored data does not match its recorded SHA-256", "etcdadm on host-b", true};
  store.write_small("2026-01-02T00:00:00Z-000001/" + std::string(kDamageMarkerFile), damage_marker_json(d));
  cat.sync(store);
  auto list = cat.backups(store.url());
  ASSERT_TRUE(list[0].damage.has_value());
  EXPECT_EQ(list[0].damage->reason, d.reason);
  EXPECT_EQ(list[0].damage->detected_by, "etcdadm on host-b");
  EXPECT_EQ(list[0].damage->detected_at_micros, d.detected_at_micros);
  EXPECT_TRUE(list[0].damage->in_store);
  EXPECT_EQ(cat.sync(store, SyncDepth::kFull).unchanged, 2);

  store.remove("2026-01-02T00:00:00Z-000001/" + std::string(kDamageMarkerFile));
  cat.sync(store);
  EXPECT_FALSE(cat.backups(store.url())[0].damage.has_value());

  DamageRecord local{1767400000000000, "walk failed at page 7", "etcdadm on this host", false};
  cat.record_damage(store.url(), cat.backups(store.url())[1], local);
  cat.sync(store);
  auto again = cat.backups(store.url());
  ASSERT_TRUE(again[1].damage.has_value());
  EXPECT_FALSE(again[1].damage->in_store);
  cat.clear_damage(store.url(), again[1].name);
  EXPECT_FALSE(cat.backups(store.url())[1].damage.has_value());
}

// A drill result written into the store by any host is seen by every catalog's next sync; one this
// host recorded is replaced by the file once the file is read; an unreadable file leaves the backup
// listed, as never drilled.
TEST(Catalog, DrillResultsAreSyncedFromTheStore) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  Catalog cat(":memory:");
  two_synced_backups(store, cat);
  const std::string newest = "2026-01-02T00:00:00Z-000001";
  DrillRecord d{1767400000000000, true, 3.25, "", "etcdadm on host-b", "3.5.35", 0};
  store.write_small(newest + "/" + kDrillResultFile, drill_result_json(d, R"({"phases":[]})"));
  cat.sync(store);
  auto list = cat.backups(store.url());
  ASSERT_TRUE(list[0].drill.has_value());
  EXPECT_TRUE(list[0].drill->passed);
  EXPECT_DOUBLE_EQ(list[0].drill->rto_seconds, 3.25);
  EXPECT_EQ(list[0].drill->drilled_by, "etcdadm on host-b");
  EXPECT_EQ(list[0].drill->drilled_at_micros, d.drilled_at_micros);
  EXPECT_FALSE(list[1].drill.has_value());
  EXPECT_EQ(cat.sync(store, SyncDepth::kFull).unchanged, 2);  // read once, not at every sync

  // This host's drill fails; the file another host writes later wins once synced.
  cat.record_drill(store.url(), list[0], DrillRecord{1767500000000000, false, 0, "no etcd 3.5", "here", "", 0});
  EXPECT_FALSE(cat.backups(store.url())[0].drill->passed);
  DrillRecord later{1767600000000000, true, 2.0, "", "etcdadm on host-c", "3.5.35", 0};
  store.write_small(newest + "/" + kDrillResultFile, drill_result_json(later, ""), /*overwrite=*/true);
  cat.sync(store);
  EXPECT_TRUE(cat.backups(store.url())[0].drill->passed);
  EXPECT_EQ(cat.backups(store.url())[0].drill->drilled_by, "etcdadm on host-c");

  store.write_small(newest + "/" + kDrillResultFile, "{not json", /*overwrite=*/true);
  cat.sync(store, SyncDepth::kFull);
  list = cat.backups(store.url());
  ASSERT_EQ(list.size(), 2u);
  EXPECT_FALSE(list[0].drill.has_value());
  EXPECT_FALSE(list[0].damage.has_value());
}

namespace {

// A store that counts how it is listed: whole, or by range (and which range).
class CountingStore : public LocalStore {
 public:
  using LocalStore::LocalStore;
  std::vector<BlobInfo> list(const std::string& prefix) override {
    if (prefix.empty()) ++full_listings;
    return LocalStore::list(prefix);
  }
  std::vector<BlobInfo> list_range(const std::string& start_after, const std::string& end_before) override {
    ranges.emplace_back(start_after, end_before);
    return LocalStore::list_range(start_after, end_before);
  }
  int full_listings = 0;
  std::vector<std::pair<std::string, std::string>> ranges;
};

std::string name_at(int64_t unix_seconds) { return make_backup_name(from_unix_micros(unix_seconds * 1000000)); }

}  // namespace

// Between full listings a sync lists only the backups named after the newest known less an hour:
// new ones appear, and so does a change inside that range (a deletion, a damage marker); a backup
// deleted further back stays until the next full listing, which comes when it is due or asked for.
TEST(Catalog, IncrementalSyncListsOnlyTheNewestUntilAFullListingIsDue) {
  test::TempDir dir;
  CountingStore store(dir / "store");
  const int64_t t0 = 1767225600;  // 2026-01-01T00:00:00Z
  for (int day = 0; day < 3; ++day) add_etcd_manager_backup(store, name_at(t0 + day * 86400), t0 + day * 86400);
  Catalog cat(dir / "catalog.db");
  cat.set_incremental_from(1);  // the default (1,000) lists stores this small in full every time
  auto first = cat.sync(store);
  EXPECT_TRUE(first.full);
  EXPECT_EQ(first.added, 3);
  EXPECT_EQ(store.full_listings, 1);

  // Nothing new: one range listing from an hour before the newest, and no write.
  auto quiet = cat.sync(store);
  EXPECT_FALSE(quiet.full);
  EXPECT_EQ(quiet.unchanged, 1);  // the newest only: the others lie outside the range
  ASSERT_EQ(store.ranges.size(), 1u);
  EXPECT_EQ(store.ranges[0].first, name_at(t0 + 2 * 86400 - 3600));
  EXPECT_EQ(store.ranges[0].second, ":");
  EXPECT_EQ(store.full_listings, 1);

  // New backups: a later one; one named 10 minutes before the newest known (a slow upload, a host
  // whose clock is behind), inside the overlap; and one named two hours before it, outside.
  add_etcd_manager_backup(store, name_at(t0 + 3 * 86400), t0 + 3 * 86400);
  add_etcd_manager_backup(store, name_at(t0 + 2 * 86400 - 600), t0 + 2 * 86400 - 600);
  add_etcd_manager_backup(store, name_at(t0 + 2 * 86400 - 7200), t0 + 2 * 86400 - 7200);
  auto grown = cat.sync(store);
  EXPECT_FALSE(grown.full);
  EXPECT_EQ(grown.added, 2);
  EXPECT_EQ(cat.backups(store.url()).size(), 5u);
  // The full listing finds the third.
  auto full = cat.sync(store, SyncDepth::kFull);
  EXPECT_TRUE(full.full);
  EXPECT_EQ(full.added, 1);
  ASSERT_EQ(cat.backups(store.url()).size(), 6u);

  // Deleted by hand, far back: still listed until the next full listing.
  store.remove(name_at(t0) + "/_etcd_backup.meta");
  EXPECT_EQ(cat.sync(store).removed, 0);
  EXPECT_EQ(cat.backups(store.url()).size(), 6u);
  // Deleted inside the range: gone at once.
  store.remove(name_at(t0 + 3 * 86400) + "/_etcd_backup.meta");
  EXPECT_EQ(cat.sync(store).removed, 1);
  EXPECT_EQ(cat.backups(store.url()).size(), 5u);
  // A full listing is due once the last is older than ETCDADM_CATALOG_FULL_SYNC (0: always).
  setenv("ETCDADM_CATALOG_FULL_SYNC", "0", 1);
  auto due = cat.sync(store);
  unsetenv("ETCDADM_CATALOG_FULL_SYNC");
  EXPECT_TRUE(due.full);
  EXPECT_EQ(due.removed, 1);
  EXPECT_EQ(cat.backups(store.url()).size(), 4u);
  setenv("ETCDADM_CATALOG_FULL_SYNC", "soon", 1);
  EXPECT_THROW(cat.sync(store), Error);
  unsetenv("ETCDADM_CATALOG_FULL_SYNC");
}

// A backup dated in the future (its writer's clock runs ahead) must not hide those written after it
// until the next full listing: the incremental range never starts later than an hour before now.
TEST(Catalog, ABackupDatedInTheFutureDoesNotHideLaterOnes) {
  test::TempDir dir;
  CountingStore store(dir / "store");
  const int64_t now = to_unix_micros(std::chrono::system_clock::now()) / 1000000;
  add_etcd_manager_backup(store, name_at(now - 2 * 86400), now - 2 * 86400);
  add_etcd_manager_backup(store, name_at(now + 86400), now + 86400);
  Catalog cat(dir / "catalog.db");
  cat.set_incremental_from(1);
  EXPECT_TRUE(cat.sync(store).full);
  add_etcd_manager_backup(store, name_at(now - 300), now - 300);
  auto s = cat.sync(store);
  EXPECT_FALSE(s.full);
  EXPECT_EQ(s.added, 1);
  EXPECT_EQ(cat.backups(store.url()).size(), 3u);
}

// The local directory keeps the contract the object stores keep (blob_store_contract.h).
TEST(Catalog, LocalStoreKeepsTheBlobStoreContract) {
  test::TempDir dir;
  LocalStore s(dir / "store");
  test::check_blob_store_contract(s);
}

TEST(Catalog, LocalStoreKeepsTheConditionalWritesContract) {
  test::TempDir dir;
  LocalStore s(dir / "store");
  test::check_conditional_writes_contract(s);
  EXPECT_TRUE(std::filesystem::exists(dir / "store/cas/.counter.lock")) << "the lock stays, and is no blob";
  EXPECT_EQ(s.list("cas/").size(), 3u);
}

// Hosts starting together probe the same fresh directory: one's remove() of its (absent) earlier
// probe must not drop the directory another has just made for its own (CI saw "cannot open
// .../etcdadm-auto/probes: No such file or directory" from one of three `etcdadm auto`).
TEST(Catalog, LocalStoreProbesRacingInAFreshDirectoryAllSucceed) {
  for (int round = 0; round < 20; ++round) {
    test::TempDir dir;
    std::vector<std::thread> hosts;
    std::atomic<int> failures{0};
    std::string first_failure;
    std::mutex mu;
    for (int h = 0; h < 4; ++h) {
      hosts.emplace_back([&, h] {
        try {
          LocalStore s(dir / "store");
          conditional_writes(s, "test", "auto/probes/h" + std::to_string(h));
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mu);
          if (failures++ == 0) first_failure = e.what();
        }
      });
    }
    for (auto& t : hosts) t.join();
    ASSERT_EQ(failures.load(), 0) << "round " << round << ": " << first_failure;
  }
  // Removing what is not there removes nothing, not even an empty directory.
  test::TempDir dir;
  std::filesystem::create_directories(dir / "store/fresh");
  LocalStore s(dir / "store");
  s.remove("fresh/absent");
  EXPECT_TRUE(std::filesystem::is_directory(dir / "store/fresh"));
}

// LocalStore::list_range walks only the top-level directories its range can hold (no full walk),
// and gives top-level files by their own name.
TEST(Catalog, LocalStoreListsARange) {
  test::TempDir dir;
  CountingStore s(dir / "store");
  s.write_small("a/one.json", "1");
  s.write_small("a/two words+plus.json", "2");
  s.write_small("b/three", "3");
  s.write_small("c", "a top-level file");
  // Links are no blobs, as in list(): neither one to a directory nor one to a file is listed.
  std::filesystem::create_directory_symlink(dir / "store/a", dir / "store/b-link");
  std::filesystem::create_symlink(dir / "store/c", dir / "store/c-link");
  std::vector<std::string> keys;
  for (const auto& b : s.list_range("a/p", "d")) keys.push_back(b.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"a/two words+plus.json", "b/three", "c"}));
  EXPECT_TRUE(s.list_range("c", "z").empty());
  EXPECT_EQ(s.full_listings, 0);
}

// A sync that finds nothing new takes no write lock: a warm `backup list` leaves the file alone.
TEST(Catalog, AQuietIncrementalSyncWritesNothing) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  add_etcd_manager_backup(store, name_at(1767225600), 1767225600);
  {
    Catalog cat(dir / "catalog.db");
    cat.sync(store);
  }
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(std::string(dir / "catalog.db").c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);  // holds the write lock
  {
    Catalog cat(dir / "catalog.db");
    cat.set_incremental_from(1);
    auto s = cat.sync(store);  // would wait 10 s for the lock, then fail, if it wrote
    EXPECT_FALSE(s.full);
    EXPECT_EQ(cat.backups(store.url()).size(), 1u);
  }
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
}

TEST(Catalog, FallsBackToMemoryWhenPathUnusable) {
  test::TempDir dir;
  write_file_atomic(dir / "file", "x");
  Catalog cat = Catalog::open_or_memory(dir / "file/catalog.db");  // parent is a file
  EXPECT_EQ(cat.path(), ":memory:");
}

TEST(Catalog, ThousandsOfBackupsListFastAfterFirstSync) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  for (int i = 0; i < 2000; ++i) {
    char name[40];
    std::snprintf(name, sizeof name, "2026-01-01T%02d:%02d:%02dZ-000000", i / 3600, (i / 60) % 60, i % 60);
    add_etcd_manager_backup(store, name, 1767225600 + i);
  }
  Catalog cat(dir / "c.db");
  EXPECT_EQ(cat.sync(store).added, 2000);
  auto t0 = std::chrono::steady_clock::now();
  auto s = cat.sync(store);  // incremental: no metadata reads
  EXPECT_EQ(s.unchanged, 2000);
  EXPECT_EQ(cat.backups(store.url()).size(), 2000u);
  std::cout << "incremental sync + list of 2000 backups: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << "s\n";
}

// `backup verify` results are a cache in the catalog: sync keeps them while the backup's data file
// is unchanged, a changed data file (re-read) or a rebuild drops them.
TEST(Catalog, VerificationIsCachedUntilDataChangesOrRebuild) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  const std::string name = "2026-01-01T00:00:00Z-000001";
  add_etcd_manager_backup(store, name, 1767225600);
  add_etcd_manager_backup(store, "2026-01-02T00:00:00Z-000001", 1767312000);
  Catalog cat(dir / "catalog.db");
  cat.sync(store);
  auto list = cat.backups(store.url());
  ASSERT_EQ(list.size(), 2u);
  EXPECT_FALSE(list[1].verification.has_value());

  VerificationRecord v;
  v.revision = 1234;
  v.total_key = 99;
  v.live_keys = 42;
  v.hash = 0xfedcba98u;
  v.verified_at_micros = 1767225700000000;
  cat.record_verification(store.url(), list[1], v);
  cat.sync(store);
  list = cat.backups(store.url());
  ASSERT_EQ(list[1].name, name);
  ASSERT_TRUE(list[1].verification.has_value());
  EXPECT_EQ(list[1].verification->revision, 1234);
  EXPECT_EQ(list[1].verification->total_key, 99);
  EXPECT_EQ(list[1].verification->live_keys, 42u);
  EXPECT_EQ(list[1].verification->hash, 0xfedcba98u);
  EXPECT_EQ(list[1].verification->verified_at_micros, 1767225700000000);
  EXPECT_FALSE(list[0].verification.has_value());

  // Reopening the file keeps it (schema 3 is not recreated).
  {
    Catalog again(dir / "catalog.db");
    EXPECT_TRUE(again.backups(store.url())[1].verification.has_value());
  }

  // The data file was replaced (other size): the backup is re-read and its verification dropped.
  store.remove(name + "/etcd.backup.gz");
  store.write_small(name + "/etcd.backup.gz", "replaced with other bytes");
  cat.sync(store, SyncDepth::kFull);  // the older backup: a day before the newest, outside an incremental sync's range
  EXPECT_FALSE(cat.backups(store.url())[1].verification.has_value());

  cat.record_verification(store.url(), cat.backups(store.url())[1], v);
  cat.rebuild(store);
  for (const auto& b : cat.backups(store.url())) EXPECT_FALSE(b.verification.has_value()) << b.name;
}

// A backup the catalog has not indexed yet is indexed by record_verification.
TEST(Catalog, RecordVerificationIndexesUnknownBackup) {
  Catalog cat(":memory:");
  BackupRecord r;
  r.name = "2026-01-01T00:00:00Z-000001";
  r.format = "etcdadm";
  r.data_file = "etcd.backup.gz";
  VerificationRecord v;
  v.revision = 7;
  v.live_keys = 3;
  cat.record_verification("file:///x", r, v);
  auto list = cat.backups("file:///x");
  ASSERT_EQ(list.size(), 1u);
  ASSERT_TRUE(list[0].verification.has_value());
  EXPECT_EQ(list[0].verification->revision, 7);
  EXPECT_EQ(list[0].verification->live_keys, 3u);
}
}  // namespace etcdadm

namespace etcdadm {

// A catalog written by an older etcdadm (schema 1, with tables) is upgraded in place, not
// replaced by an in-memory fallback; the attempt history works afterwards.
TEST(CatalogUpgrade, OlderSchemaIsRecreatedInPlace) {
  test::TempDir dir;
  std::string path = dir / "old.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE stores (id INTEGER PRIMARY KEY, url TEXT);"
                         "CREATE TABLE backups (store_id INTEGER, name TEXT);"
                         "INSERT INTO stores VALUES (1, 'file:///x'); PRAGMA user_version=1;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Catalog c(path);
  AttemptRecord a;
  a.started_micros = 1;
  a.finished_micros = 2;
  a.result = "failure";
  a.reason = "auth";
  a.message = "signature does not match";
  c.record_attempt("file:///x", a);
  auto history = c.attempts("file:///x");
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].reason, "auth");
}

// The pins are no cache: an etcdadm from before v7 starts a catalog of a schema it does not know
// over (dropping its tables, writing its own version), and the pins are still in force when this
// one opens the file again.
TEST(CatalogUpgrade, AudiencePinsOutliveAnOlderEtcdadmStartingTheCatalogOver) {
  test::TempDir dir;
  std::string path = dir / "pins.db";
  {
    Catalog c(path);
    c.pin_audience("s3://b/etcd", AudiencePin{"fedcba9876543210", {"age1a"}, 5, "first write"});
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // What the start-over of etcdadm 6 does to a catalog of schema 7.
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE attempts; DROP TABLE backups; DROP TABLE stores;"
                         "CREATE TABLE stores (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, last_sync_micros INTEGER);"
                         "CREATE TABLE backups (store_id INTEGER, name TEXT); CREATE TABLE attempts (id INTEGER);"
                         "PRAGMA user_version=6;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Catalog again(path);
  auto pin = again.audience_pin("s3://b/etcd");
  ASSERT_TRUE(pin.has_value());
  EXPECT_EQ(pin->key_id, "fedcba9876543210");
  EXPECT_FALSE(again.audience_pin("s3://b/other").has_value());
}

// A schema-2 catalog (etcdadm before the verification cache) is migrated in place to schema 7:
// its backups and attempt history stay, verification results can be recorded, attempts are told
// apart by origin, the rows from before read as unencrypted and never drilled, drills can be
// recorded, and audience pins kept.
TEST(CatalogUpgrade, Schema2IsMigratedKeepingRows) {
  test::TempDir dir;
  std::string path = dir / "v2.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // The v2 schema, exactly as etcdadm created it.
  ASSERT_EQ(
      sqlite3_exec(db,
                   "CREATE TABLE stores (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, last_sync_micros INTEGER);"
                   "CREATE TABLE backups ("
                   " store_id INTEGER NOT NULL REFERENCES stores(id), name TEXT NOT NULL,"
                   " taken_at_micros INTEGER NOT NULL, format TEXT NOT NULL, source TEXT NOT NULL,"
                   " data_file TEXT NOT NULL, compression TEXT NOT NULL, stored_size INTEGER NOT NULL,"
                   " db_size INTEGER, revision INTEGER, revision_exact INTEGER NOT NULL,"
                   " db_sha256 TEXT NOT NULL, stored_sha256 TEXT NOT NULL, hash_trailer INTEGER NOT NULL,"
                   " etcd_version TEXT NOT NULL, cluster_id TEXT NOT NULL, member_id TEXT NOT NULL,"
                   " PRIMARY KEY (store_id, name));"
                   "CREATE INDEX backups_by_time ON backups(store_id, taken_at_micros);"
                   "CREATE TABLE attempts (id INTEGER PRIMARY KEY, store_id INTEGER NOT NULL REFERENCES stores(id),"
                   " started_micros INTEGER NOT NULL, finished_micros INTEGER NOT NULL, result TEXT NOT NULL,"
                   " reason TEXT NOT NULL, message TEXT NOT NULL, backup_name TEXT NOT NULL);"
                   "CREATE INDEX attempts_by_time ON attempts(store_id, started_micros);"
                   "INSERT INTO stores VALUES (1, 'file:///x', 5);"
                   "INSERT INTO backups VALUES (1, '2026-01-01T00:00:00Z-000001', 1767225600000000, 'etcdadm',"
                   " 'snapshot', 'etcd.backup.gz', 'gzip', 100, 4096, 77, 1, 'aa', 'bb', 1, '3.5.9', 'c1', 'm1');"
                   "INSERT INTO attempts VALUES (1, 1, 10, 20, 'success', '', '', '2026-01-01T00:00:00Z-000001');"
                   "PRAGMA user_version=2;",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);

  Catalog c(path);
  auto list = c.backups("file:///x");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].name, "2026-01-01T00:00:00Z-000001");
  ASSERT_TRUE(list[0].revision.has_value());
  EXPECT_EQ(*list[0].revision, 77);
  EXPECT_EQ(list[0].etcd_version, "3.5.9");
  EXPECT_FALSE(list[0].verification.has_value());
  EXPECT_EQ(list[0].encryption, "none");
  EXPECT_FALSE(list[0].encrypted());
  EXPECT_TRUE(list[0].encrypted_to.empty());
  EXPECT_FALSE(list[0].drill.has_value());
  ASSERT_EQ(c.attempts("file:///x").size(), 1u);

  VerificationRecord v;
  v.revision = 77;
  v.total_key = 10;
  v.live_keys = 8;
  v.hash = 1;
  v.verified_at_micros = 30;
  c.record_verification("file:///x", list[0], v);
  ASSERT_TRUE(c.backups("file:///x")[0].verification.has_value());
  EXPECT_EQ(c.backups("file:///x")[0].verification->live_keys, 8u);
  c.record_drill("file:///x", list[0], DrillRecord{60, false, 2.5, "hashkv differs", "etcdadm on h", "3.5.9", 0});
  auto drilled = c.backups("file:///x")[0];
  ASSERT_TRUE(drilled.drill.has_value());
  EXPECT_FALSE(drilled.drill->passed);
  EXPECT_EQ(drilled.drill->drilled_at_micros, 60);
  EXPECT_DOUBLE_EQ(drilled.drill->rto_seconds, 2.5);
  EXPECT_EQ(drilled.drill->message, "hashkv differs");
  EXPECT_EQ(drilled.drill->etcd_version, "3.5.9");
  EXPECT_TRUE(drilled.verification.has_value());  // a drill does not cost the verification cache

  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 7);
  sqlite3_finalize(st);
  sqlite3_close(db);
  // v7: the audience pins exist after the migration.
  EXPECT_FALSE(c.audience_pin("file:///x").has_value());
  c.pin_audience("file:///x", AudiencePin{"0123456789abcdef", {"age1a", "age1b"}, 70, "first write"});
  auto pin = c.audience_pin("file:///x");
  ASSERT_TRUE(pin.has_value());
  EXPECT_EQ(pin->key_id, "0123456789abcdef");
  EXPECT_EQ(pin->labels, (std::vector<std::string>{"age1a", "age1b"}));
  EXPECT_EQ(pin->pinned_by, "first write");
  // The attempt recorded before v4 has no origin: it counts for no sidecar.
  EXPECT_EQ(c.attempts("file:///x")[0].origin, "");
  EXPECT_TRUE(c.attempts("file:///x", 100, "sidecar").empty());
  AttemptRecord a;
  a.started_micros = 40;
  a.finished_micros = 50;
  a.result = "success";
  a.origin = "sidecar";
  c.record_attempt("file:///x", a);
  ASSERT_EQ(c.attempts("file:///x", 100, "sidecar").size(), 1u);
  EXPECT_EQ(c.attempts("file:///x").size(), 2u);
}

}  // namespace etcdadm

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/fs.h"
#include <sqlite3.h>

#include "store/catalog.h"
#include "store/local_store.h"
#include "test/support/test_env.h"

namespace etcdadm {

// Writes a minimal complete backup directory the way etcd-manager would.
static void add_etcd_manager_backup(LocalStore& store, const std::string& name, int64_t ts) {
  store.write_small(name + "/etcd.backup.gz", "not really gzip");
  store.write_small(name + "/_etcd_backup.meta", etcd_manager_meta_json("3.4.13", ts, 3));
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

  auto s2 = cat.sync(store);
  EXPECT_EQ(s2.added, 0);
  EXPECT_EQ(s2.unchanged, 2);

  store.remove("2026-01-01T00:00:00Z-000001/_etcd_backup.meta");
  store.remove("2026-01-01T00:00:00Z-000001/etcd.backup.gz");
  auto s3 = cat.sync(store);
  EXPECT_EQ(s3.removed, 1);
  EXPECT_EQ(cat.backups(store.url()).size(), 1u);

  // A fresh catalog file rebuilds the same view from the store alone.
  Catalog fresh(dir / "other.db");
  fresh.rebuild(store);
  EXPECT_EQ(fresh.backups(store.url()).size(), 1u);
}

TEST(Catalog, UnreadableMetadataIsSkippedNotFatal) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  add_etcd_manager_backup(store, "2026-01-01T00:00:00Z-000001", 1767225600);
  store.write_small("2026-01-02T00:00:00Z-000001/etcd.backup.gz", "x");
  store.write_small("2026-01-02T00:00:00Z-000001/_etcd_backup.meta", "{garbage");
  Catalog cat(":memory:");
  auto s = cat.sync(store);
  EXPECT_EQ(s.added, 1);
  EXPECT_EQ(s.unreadable, 1);
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

}  // namespace etcdadm

// Tests of store/layout.{h,cc}: backup names, backup metadata, drill results and the store's
// settings marker (compression, file modes).
#include "store/layout.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <cstdlib>

#include "common/error.h"
#include "common/fs.h"
#include "store/etcd_manager.h"
#include "store/backend/local/local_store.h"
#include "test/support/file_mode.h"
#include "test/support/test_env.h"

namespace etcdadm {

TEST(BackupName, FormatAndParse) {
  auto t = from_unix_micros(int64_t{1557253681} * 1000000 + 977);
  EXPECT_EQ(make_backup_name(t), "2019-05-07T18:28:01Z-000977");  // etcd-manager's documented example
  auto p = parse_backup_name("2019-05-07T18:28:01Z-000977");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->suffix, 977);
  EXPECT_EQ(to_unix_micros(p->time), to_unix_micros(t));
  EXPECT_FALSE(parse_backup_name("2019-05-07T18:28:01Z"));
  EXPECT_FALSE(parse_backup_name("2019-05-07T18:28:01Z-00097x"));
  EXPECT_FALSE(parse_backup_name("control"));
}

TEST(BackupName, TimeOrderEqualsNameOrderAcrossDigitChanges) {
  // etcd-operator deleted its newest backup when names sorted as text diverged from time order.
  auto a = make_backup_name(from_unix_micros(int64_t{999999999} * 1000000));
  auto b = make_backup_name(from_unix_micros(int64_t{1000000000} * 1000000));
  EXPECT_LT(a, b);
  EXPECT_LT(to_unix_micros(parse_backup_name(a)->time), to_unix_micros(parse_backup_name(b)->time));
}

TEST(BackupMeta, RoundTrip) {
  BackupMeta m;
  m.name = "2019-05-07T18:28:01Z-000977";
  m.data_file = "etcd.backup.zst";
  m.compression = Compression::kZstd;
  m.revision = 42;
  m.revision_exact = true;
  m.db_size = 20480;
  m.stored_size = 1000;
  m.db_sha256 = std::string(64, 'a');
  auto back = backup_meta_from_json(backup_meta_to_json(m), "x");
  EXPECT_EQ(back.name, m.name);
  EXPECT_EQ(back.compression, Compression::kZstd);
  EXPECT_EQ(*back.revision, 42);
  EXPECT_TRUE(back.revision_exact);
  EXPECT_EQ(back.db_size, 20480u);
  EXPECT_THROW(backup_meta_from_json(R"({"layoutVersion":1})", "x"), Error);  // dataFile, storedSize missing
  EXPECT_FALSE(back.source_hash.has_value());
  EXPECT_EQ(backup_meta_to_json(m).find("sourceHashKV"), std::string::npos);  // absent, not null
}

// sourceHashKV (a layout v1 addition): written as docs/store-format.md shows it, read back; metadata
// without it (older backups) reads as before, and a malformed one is corrupt metadata.
TEST(BackupMeta, SourceHashKvKnownAnswer) {
  BackupMeta m;
  m.name = "2026-11-26T09:28:33Z-160146";
  m.data_file = "etcd.backup.gz";
  m.stored_size = 10;
  m.revision = 52;
  m.source_hash = SourceHashKv{52, 4277797508u, -1};
  auto j = nlohmann::json::parse(backup_meta_to_json(m));
  EXPECT_EQ(j["sourceHashKV"].dump(), R"({"compactRevision":-1,"hash":4277797508,"revision":52})");
  auto back = backup_meta_from_json(backup_meta_to_json(m), "x");
  ASSERT_TRUE(back.source_hash.has_value());
  EXPECT_EQ(back.source_hash->hash, 4277797508u);
  EXPECT_EQ(back.source_hash->revision, 52);
  EXPECT_EQ(back.source_hash->compact_revision, -1);
  EXPECT_EQ(record_from_meta(back).source_hash->hash, 4277797508u);
  j["sourceHashKV"]["hash"] = "x";
  EXPECT_THROW(backup_meta_from_json(j.dump(), "x"), Error);
  j["sourceHashKV"] = {{"revision", 52}};
  EXPECT_THROW(backup_meta_from_json(j.dump(), "x"), Error);
}

TEST(DrillResult, RoundTripAndRefusals) {
  DrillRecord d{1767400000123456, false, 1.5, "hashkv: expected 1, served 2", "etcdadm 0.1.0 on h", "3.6.16", 0};
  auto text = drill_result_json(d, R"({"checks":[{"name":"hashkv"}]})");
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["result"], "failed");
  EXPECT_EQ(j["drilledAt"], "2026-01-03T00:26:40.123456Z");
  EXPECT_EQ(j["details"]["checks"][0]["name"], "hashkv");
  auto back = parse_drill_result(text, "x");
  EXPECT_FALSE(back.passed);
  EXPECT_EQ(back.drilled_at_micros, d.drilled_at_micros);
  EXPECT_DOUBLE_EQ(back.rto_seconds, 1.5);
  EXPECT_EQ(back.message, d.message);
  EXPECT_EQ(back.etcd_version, "3.6.16");
  EXPECT_THROW(parse_drill_result("[]", "x"), Error);
  EXPECT_THROW(parse_drill_result(R"({"result":"maybe","drilledAt":"2026-01-03T00:26:40Z"})", "x"), Error);
  EXPECT_THROW(parse_drill_result(R"({"result":"passed","drilledAt":"yesterday"})", "x"), Error);
  EXPECT_THROW(parse_drill_result(R"({"result":"passed"})", "x"), Error);
}

TEST(BackupMetaNumbers, FloatsAndNegativesWhereIntegersBelongAreCorrupt) {
  // nlohmann cast 2.9e26 into uint64_t (undefined behaviour; found by the store_metadata fuzz
  // target) and wrapped -1 to 2^64-1.
  auto meta = [](const std::string& stored_size) {
    return R"({"layoutVersion": 1, "dataFile": "etcd.backup.gz", "storedSize": )" + stored_size + "}";
  };
  EXPECT_EQ(backup_meta_from_json(meta("881"), "t").stored_size, 881u);
  for (const char* bad : {"2.87778e+26", "-1", "1.5", "\"881\"", "18446744073709551616"}) {
    try {
      backup_meta_from_json(meta(bad), "t");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << bad;
    }
  }
  EXPECT_THROW(parse_etcd_manager_meta(R"({"clusterSpec": {"memberCount": 1e30}})", "t"), Error);
  EXPECT_THROW(parse_store_settings(R"({"layoutVersion": 1e30})", "t"), Error);
}

TEST(StoreSettings, MarkerDecidesCompression) {
  test::TempDir dir;
  LocalStore store(dir.path());
  EXPECT_FALSE(read_store_settings(store));
  EXPECT_EQ(ensure_store_settings(store, {Compression::kZstd, std::nullopt}).compression, Compression::kZstd);
  EXPECT_EQ(ensure_store_settings(store, {}).compression, Compression::kZstd);
  EXPECT_THROW(ensure_store_settings(store, {Compression::kGzip, std::nullopt}), Error);
}

namespace {

using test::mode_of;

// Runs `body` with the given umask, restoring the old one afterwards.
template <typename F>
void with_umask(mode_t mask, F body) {
  mode_t old = ::umask(mask);
  try {
    body();
  } catch (...) {
    ::umask(old);
    throw;
  }
  ::umask(old);
}

}  // namespace

TEST(StoreFileMode, ParsesTheModesAStoreMayHaveAndRefusesTheRest) {
  EXPECT_EQ(parse_store_file_mode("0600"), 0600u);
  EXPECT_EQ(parse_store_file_mode("600"), 0600u);
  EXPECT_EQ(parse_store_file_mode("0640"), 0640u);
  EXPECT_EQ(parse_store_file_mode("0660"), 0660u);
  for (const char* bad : {"0644", "0604", "0666", "0400", "0700", "0620", "04600", "rw-------", "", "0x180", "9600",
                          "01000000"}) {
    EXPECT_THROW(parse_store_file_mode(bad), Error) << bad;
  }
  try {
    parse_store_file_mode("0644");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("other users"), std::string::npos) << e.what();
  }
}

TEST(StoreFileMode, ANewLocalStoreIsPrivateWhateverTheUmask) {
  with_umask(0, [] {
    test::TempDir dir;
    std::string root = dir.path() + "/new/store";
    LocalStore store(root);
    StoreSettings s = ensure_store_settings(store, {});
    EXPECT_EQ(s.file_mode, 0600u);
    store.write_small("2026-01-01T00:00:00Z-000000/etcd.backup.gz", "secret bytes");
    EXPECT_EQ(mode_of(root + "/" + kStoreMarkerFile), 0600u);
    EXPECT_EQ(mode_of(root + "/2026-01-01T00:00:00Z-000000/etcd.backup.gz"), 0600u);
    EXPECT_EQ(mode_of(root + "/2026-01-01T00:00:00Z-000000"), 0700u);
    EXPECT_EQ(mode_of(root), 0700u);
    EXPECT_EQ(mode_of(dir.path() + "/new"), 0700u);  // every directory etcdadm made on the way
    EXPECT_NE(read_file(root + "/" + kStoreMarkerFile).find("\"fileMode\": \"0600\""), std::string::npos);
  });
}

TEST(StoreFileMode, AGroupModeIsRecordedAndKeptUnderAStrictUmask) {
  test::TempDir dir;
  with_umask(077, [&] {
    LocalStore store(dir.path() + "/s");
    EXPECT_EQ(ensure_store_settings(store, {std::nullopt, 0640}).file_mode, 0640u);
    store.write_small("b/etcd.backup.gz", "x");
    EXPECT_EQ(mode_of(dir.path() + "/s/b/etcd.backup.gz"), 0640u);
    EXPECT_EQ(mode_of(dir.path() + "/s/b"), 0750u);
  });
  // A later writer without --store-mode gets the recorded mode; a different one is refused.
  LocalStore again(dir.path() + "/s");
  EXPECT_EQ(ensure_store_settings(again, {}).file_mode, 0640u);
  again.write_small("c/etcd.backup.gz", "x");
  EXPECT_EQ(mode_of(dir.path() + "/s/c/etcd.backup.gz"), 0640u);
  try {
    ensure_store_settings(again, {std::nullopt, 0600});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("0640"), std::string::npos) << e.what();
  }
}

TEST(StoreFileMode, AStoreFromBeforeModesStaysReadableAndItsExposedFilesAreFound) {
  test::TempDir dir;
  std::string root = dir.path() + "/old";
  // What etcdadm wrote before: 0755 directories, 0644 files, a marker without "fileMode".
  make_dirs(root + "/2025-01-01T00:00:00Z-000000", 0755);
  ::chmod(root.c_str(), 0755);
  write_file_atomic(root + "/" + kStoreMarkerFile,
                    R"({"layoutVersion": 1, "compression": "gzip", "createdAt": "2025-01-01T00:00:00Z"})", 0644);
  write_file_atomic(root + "/2025-01-01T00:00:00Z-000000/etcd.backup.gz", "old secret", 0644);
  write_file_atomic(root + "/2025-01-01T00:00:00Z-000000/_etcd_backup.meta", "{}", 0644);
  LocalStore store(root);
  auto settings = read_store_settings(store);
  ASSERT_TRUE(settings);
  EXPECT_FALSE(settings->file_mode);
  EXPECT_EQ(settings->effective_file_mode(), 0600u);

  auto findings = store.access_findings(0600);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_NE(findings[0].find("3 file(s)"), std::string::npos) << findings[0];  // marker + 2 backup files
  EXPECT_NE(findings[0].find("0644"), std::string::npos) << findings[0];
  EXPECT_NE(findings[0].find("chmod -R g-rwx,o-rwx " + root), std::string::npos) << findings[0];
  EXPECT_NE(findings[1].find("1 directory"), std::string::npos) << findings[1];  // the root is not counted

  // New files are private even though the marker predates modes; the marker is not rewritten.
  ensure_store_settings(store, {});
  store.write_small("2026-01-01T00:00:00Z-000000/etcd.backup.gz", "new secret");
  EXPECT_EQ(mode_of(root + "/2026-01-01T00:00:00Z-000000/etcd.backup.gz"), 0600u);
  EXPECT_EQ(mode_of(root + "/2026-01-01T00:00:00Z-000000"), 0700u);
  EXPECT_EQ(read_file(root + "/" + kStoreMarkerFile).find("fileMode"), std::string::npos);

  // After the suggested chmod nothing is found; --store-mode on such a store is recorded.
  ASSERT_EQ(std::system(("chmod -R g-rwx,o-rwx " + root).c_str()), 0);
  EXPECT_TRUE(store.access_findings(0600).empty());
  EXPECT_EQ(ensure_store_settings(store, {std::nullopt, 0600}).file_mode, 0600u);
  EXPECT_EQ(read_store_settings(store)->file_mode, 0600u);
}

TEST(StoreFileMode, AMarkerWithABadModeIsCorruptNotIgnored) {
  test::TempDir dir;
  write_file_atomic(dir.path() + "/" + kStoreMarkerFile, R"({"layoutVersion": 1, "fileMode": "0644"})", 0600);
  LocalStore store(dir.path());
  try {
    read_store_settings(store);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
  }
  write_file_atomic(dir.path() + "/" + kStoreMarkerFile, R"({"layoutVersion": 1, "fileMode": 384})", 0600, true);
  EXPECT_THROW(read_store_settings(store), Error);  // a number, not the documented octal string
}

}  // namespace etcdadm

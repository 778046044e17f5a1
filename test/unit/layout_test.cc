#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <cstring>

#include "store/etcd_manager.h"
#include "store/layout.h"
#include "store/backend/local/local_store.h"
#include "store/blob_capabilities.h"
#include "store/snapshot_digest.h"
#include "store/store_url.h"
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

TEST(EtcdManagerMeta, ExactFormat) {
  EXPECT_EQ(etcd_manager_meta_json("3.4.13", 1560935018, 3),
            "{\n  \"etcdVersion\": \"3.4.13\",\n  \"timestamp\": \"1560935018\",\n  \"clusterSpec\": {\n"
            "    \"memberCount\": 3,\n    \"etcdVersion\": \"3.4.13\"\n  }\n}");
  auto j = nlohmann::json::parse(etcd_manager_meta_json("3.4.13", 1560935018, 3));
  EXPECT_EQ(j.size(), 3u);  // never more fields than etcd-manager knows
}

TEST(EtcdManagerMeta, TimestampAsStringOrNumber) {
  auto a = parse_etcd_manager_meta(R"({"etcdVersion":"3.4.13","timestamp":"1560935018","clusterSpec":{"memberCount":3}})", "a");
  auto b = parse_etcd_manager_meta(R"({"etcdVersion":"3.4.13","timestamp":1560935018})", "b");
  EXPECT_EQ(*a.timestamp, 1560935018);
  EXPECT_EQ(*b.timestamp, 1560935018);
  EXPECT_EQ(a.member_count, 3);
  EXPECT_THROW(parse_etcd_manager_meta("{not json", "c"), Error);
  EXPECT_THROW(parse_etcd_manager_meta(R"({"timestamp":"soon"})", "d"), Error);
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

TEST(StoreUrl, Forms) {
  EXPECT_EQ(parse_store_url("/var/backups/etcd/").canonical(), "file:///var/backups/etcd");
  EXPECT_EQ(parse_store_url("file:///var/backups/etcd").canonical(), "file:///var/backups/etcd");
  auto s3 = parse_store_url("s3://bucket/cluster/backups/etcd/main/");
  EXPECT_EQ(s3.bucket, "bucket");
  EXPECT_EQ(s3.prefix, "cluster/backups/etcd/main");
  EXPECT_EQ(parse_store_url("gs://b").canonical(), "gs://b");
  EXPECT_THROW(parse_store_url("ftp://x/y"), Error);
  EXPECT_THROW(parse_store_url("s3:///nobucket"), Error);
  EXPECT_THROW(parse_store_url("file://relative"), Error);
  EXPECT_THROW(parse_store_url(""), Error);
}

// A mistyped scheme or a bare relative path must be refused (never a directory under the working
// directory), with the URL that was probably meant in the hint.
TEST(StoreUrl, MistypedSchemesAndBareRelativePathsAreRefused) {
  auto hint_of = [](const std::string& url) {
    try {
      parse_store_url(url);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << url;
      return std::string(e.what()) + " | " + e.hint();
    }
    ADD_FAILURE() << url << " was accepted";
    return std::string();
  };
  EXPECT_NE(hint_of("s3:/my-bucket/etcd").find("did you mean s3://my-bucket/etcd?"), std::string::npos) << hint_of("s3:/my-bucket/etcd");
  EXPECT_NE(hint_of("s3//my-bucket/etcd").find("did you mean s3://my-bucket/etcd?"), std::string::npos) << hint_of("s3//my-bucket/etcd");
  EXPECT_NE(hint_of("s3:my-bucket/etcd").find("did you mean s3://my-bucket/etcd?"), std::string::npos) << hint_of("s3:my-bucket/etcd");
  EXPECT_NE(hint_of("S3://my-bucket/etcd").find("did you mean s3://my-bucket/etcd?"), std::string::npos) << hint_of("S3://my-bucket/etcd");
  EXPECT_NE(hint_of("gcs://b/p").find("did you mean gs://b/p?"), std::string::npos) << hint_of("gcs://b/p");
  EXPECT_NE(hint_of("gs:/b/p").find("did you mean gs://b/p?"), std::string::npos) << hint_of("gs:/b/p");
  EXPECT_NE(hint_of("file:/var/backups").find("did you mean file:///var/backups?"), std::string::npos) << hint_of("file:/var/backups");
  EXPECT_NE(hint_of("ftp://x/y").find("unsupported scheme"), std::string::npos) << hint_of("ftp://x/y");
  EXPECT_NE(hint_of("backups/etcd").find("write ./backups/etcd"), std::string::npos) << hint_of("backups/etcd");
  // Explicitly relative paths are fine and become absolute.
  EXPECT_EQ(parse_store_url("./backups").canonical(), "file://" + absolute_path("backups"));
  EXPECT_EQ(parse_store_url("../backups").canonical(), "file://" + absolute_path("../backups"));
}

// Known answer: SHA-256("abc") from FIPS 180-2.
TEST(Sha256, KnownAnswer) {
  EXPECT_EQ(to_hex(sha256_of("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static std::string fake_snapshot(size_t pages, bool with_trailer) {
  std::string db(pages * 4096, '\0');
  for (size_t i = 0; i < db.size(); ++i) db[i] = static_cast<char>((i * 7) % 251);
  const unsigned char magic[4] = {0xed, 0xda, 0x0c, 0xed};
  std::memcpy(&db[16], magic, 4);
  if (with_trailer) {
    auto d = sha256_of(db.data(), db.size());
    db.append(reinterpret_cast<const char*>(d.data()), d.size());
  }
  return db;
}

TEST(SnapshotDigest, AcceptsIntactInAnyChunking) {
  std::string snap = fake_snapshot(5, true);
  for (size_t chunk : {1ul, 7ul, 31ul, 32ul, 33ul, 4096ul, snap.size()}) {
    SnapshotDigestSink sink(nullptr);
    for (size_t off = 0; off < snap.size(); off += chunk) {
      size_t n = std::min(chunk, snap.size() - off);
      sink.write(reinterpret_cast<const uint8_t*>(snap.data() + off), n);
    }
    auto d = sink.finish();
    EXPECT_TRUE(d.has_trailer) << chunk;
    EXPECT_TRUE(d.trailer_matches) << chunk;
    EXPECT_EQ(d.db_bytes, 5u * 4096) << chunk;
    EXPECT_NO_THROW(require_intact_snapshot(d, "x", false));
  }
}

TEST(SnapshotDigest, RejectsFlippedTruncatedAndTrailerless) {
  std::string snap = fake_snapshot(3, true);
  auto digest_of = [](const std::string& s) {
    SnapshotDigestSink sink(nullptr);
    sink.write(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    return sink.finish();
  };
  std::string flipped = snap;
  flipped[5000] ^= 1;
  EXPECT_THROW(require_intact_snapshot(digest_of(flipped), "x", false), Error);
  EXPECT_THROW(require_intact_snapshot(digest_of(snap.substr(0, snap.size() - 100)), "x", false), Error);
  std::string bare = fake_snapshot(3, false);
  EXPECT_THROW(require_intact_snapshot(digest_of(bare), "x", false), Error);
  EXPECT_NO_THROW(require_intact_snapshot(digest_of(bare), "x", true));
  std::string not_bolt = snap;
  not_bolt[16] = 0;
  EXPECT_THROW(require_intact_snapshot(digest_of(not_bolt), "x", false), Error);
}

TEST(LocalStore, AtomicCreateAndList) {
  test::TempDir dir;
  LocalStore store(dir.path());
  auto w = store.create("a/one", false);
  w->write(reinterpret_cast<const uint8_t*>("hello"), 5);
  EXPECT_TRUE(store.list("").empty());  // invisible before commit
  w->commit();
  ASSERT_EQ(store.list("").size(), 1u);
  EXPECT_EQ(store.read_small("a/one"), "hello");
  EXPECT_THROW(store.create("a/one", false)->commit(), Error);  // never replaced silently
  {
    auto aborted = store.create("a/two", false);
    aborted->write(reinterpret_cast<const uint8_t*>("x"), 1);
  }  // destroyed uncommitted
  EXPECT_FALSE(store.stat("a/two"));
  EXPECT_EQ(store.list("").size(), 1u);
  store.remove("a/one");
  EXPECT_TRUE(store.list("").empty());
  EXPECT_THROW(store.create("../escape", false), Error);
}

// A store moved away while a file is being written (the sidecar's store outage): the write
// commits, or its temp file goes, in the directory it was created in, wherever that is now.
TEST(LocalStore, AWriteOutlivesARenameOfItsDirectoryWithoutLeavingATempFile) {
  test::TempDir dir;
  std::string store = dir / "store", away = dir / "away";
  LocalStore s(store);
  s.write_small("b/first", "1");
  auto committed = s.create("b/second", false);
  auto aborted = s.create("b/third", false);
  committed->write(reinterpret_cast<const uint8_t*>("2"), 1);
  aborted->write(reinterpret_cast<const uint8_t*>("3"), 1);
  ASSERT_EQ(::rename(store.c_str(), away.c_str()), 0);
  committed->commit();
  aborted.reset();  // destroyed uncommitted
  ASSERT_EQ(::rename(away.c_str(), store.c_str()), 0);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(store + "/b")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(s.read_small("b/second"), "2");
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

TEST(LocalStoreLinks, ASymbolicLinkIsNoBlob) {
  test::TempDir dir;
  write_file_atomic(dir.path() + "/secret", "not a backup", 0600);
  LocalStore store(dir.path() + "/s");
  store.write_small("b/etcd.backup.gz", "x");
  ASSERT_EQ(::symlink((dir.path() + "/secret").c_str(), (dir.path() + "/s/b/_etcd_backup.meta").c_str()), 0);
  auto listed = store.list("");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].key, "b/etcd.backup.gz");
  EXPECT_FALSE(store.stat("b/_etcd_backup.meta"));
  try {
    store.open("b/_etcd_backup.meta");
    FAIL() << "a link was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
}

// A link anywhere on the way, not only at the last component: `b/link -> <a live data dir>` must not
// make `b/link/db` readable, statable, removable or writable through the store. (Before the fix,
// open and stat followed it: O_NOFOLLOW covers only a path's last component.)
TEST(LocalStoreLinks, ALinkedDirectoryOnTheWayIsNeverFollowed) {
  test::TempDir dir;
  make_dirs(dir.path() + "/live/member/snap");
  write_file_atomic(dir.path() + "/live/member/snap/db", "the live database", 0600);
  LocalStore store(dir.path() + "/s");
  store.write_small("b/etcd.backup.gz", "x");
  ASSERT_EQ(::symlink((dir.path() + "/live/member/snap").c_str(), (dir.path() + "/s/b/link").c_str()), 0);
  ASSERT_EQ(::symlink((dir.path() + "/live").c_str(), (dir.path() + "/s/c").c_str()), 0);
  for (const std::string key : std::vector<std::string>{"b/link/db", "c/member/snap/db"}) {
    try {
      store.open(key);
      ADD_FAILURE() << key << " was read through a link";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << e.what();
      EXPECT_NE(std::string(e.what()).find("is a symbolic link"), std::string::npos) << e.what();
    }
    EXPECT_THROW(store.stat(key), Error) << key;
    EXPECT_THROW(store.remove(key), Error) << key;
    EXPECT_THROW(store.write_small(key, "overwritten"), Error) << key;
  }
  EXPECT_EQ(read_file(dir.path() + "/live/member/snap/db"), "the live database");
  // A key with "." or ".." segments, an empty segment or a control character is refused before any
  // path or URL is made of it.
  for (const std::string key : std::vector<std::string>{"../s/b/etcd.backup.gz", "b/../b/etcd.backup.gz",
                                                        "b/./etcd.backup.gz", "b//x", "/b/x", "b/x\n"}) {
    EXPECT_THROW(store.open(key), Error) << key;
    EXPECT_THROW(check_store_key(key), Error) << key;
  }
  for (const std::string key :
       std::vector<std::string>{"", "b/", "changelog/", "b/etcd.backup.gz", "2026-11-21T10:00:00Z-000001/x.age"}) {
    EXPECT_NO_THROW(check_store_key(key)) << key;
  }
  ObjectKeys keys{"root/dir"};
  EXPECT_EQ(keys.object("b/etcd.backup.gz"), "root/dir/b/etcd.backup.gz");
  EXPECT_THROW(keys.object("b/../../other/etcd.backup.gz"), Error);
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

uint32_t mode_of(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

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

// A local directory has file modes and leftover temp files, and nothing of an object store's:
// the free forms do what the capability says where there is one and nothing where there is none.
TEST(BlobCapabilities, ALocalStoreHasFileModesAndLeftoversOnly) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  BlobStore& blobs = store;
  EXPECT_NE(capability<FileModes>(blobs), nullptr);
  EXPECT_NE(capability<LeftoverUploads>(blobs), nullptr);
  EXPECT_EQ(capability<VersionedBlobs>(blobs), nullptr);
  EXPECT_EQ(capability<BlobLocks>(blobs), nullptr);
  EXPECT_EQ(capability<ReloadableCredentials>(blobs), nullptr);

  set_file_mode(blobs, 0640);
  store.write_small("b/one", "x");
  EXPECT_EQ(mode_of(dir / "store/b/one"), 0640u);
  EXPECT_EQ(mode_of(dir / "store/b"), 0750u);
  EXPECT_TRUE(access_findings(blobs, 0640).empty());
  EXPECT_FALSE(access_findings(blobs, 0600).empty()) << "0640 files exceed 0600";
  EXPECT_FALSE(lock_of(blobs, "b/one"));
  auto purge = purge_noncurrent_versions(blobs, "");
  EXPECT_FALSE(purge.versioned);
  EXPECT_EQ(purge.removed, 0u);
  reload_credentials(blobs);  // nothing to reload, and no error
  EXPECT_EQ(store.read_small("b/one"), "x");
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

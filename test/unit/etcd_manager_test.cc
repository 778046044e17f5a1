// etcd-manager's control files and restore rules (store/etcd_manager.h), with known answers taken
// from its source (kubernetes-sigs/etcd-manager v3.0.20260707): pkg/apis/etcd/json_test.go pins
// the bytes its older jsonpb writer produced, which are what deployed stores hold (recorded in
// docs/store-format.md §10); EtcdManagerStore.* (test/e2e/etcd_manager_test.cc) checks whole
// stores against the same documented facts.
#include <gtest/gtest.h>

#include "common/error.h"
#include "store/etcd_manager.h"
#include "store/layout.h"
#include "store/backend/local/local_store.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

TEST(EtcdManagerControl, ClusterSpecAndCommandAreByteForByteJsonpb) {
  // pkg/apis/etcd/json_test.go, TestParsesLegacyJsonpbFormat: "ClusterSpec".
  EXPECT_EQ(etcd_manager_cluster_spec_json({3, "3.4.13"}), "{\n  \"memberCount\": 3,\n  \"etcdVersion\": \"3.4.13\"\n}");
  // ... "Command_RestoreBackup".
  EtcdManagerCommand c;
  c.timestamp_nanos = 1704067200;
  c.restore_backup = EtcdManagerRestoreCommand{{3, "3.4.13"}, "2024-01-01T00-00-00Z-1"};
  EXPECT_EQ(etcd_manager_command_json(c),
            "{\n"
            "  \"timestamp\": \"1704067200\",\n"
            "  \"restoreBackup\": {\n"
            "    \"clusterSpec\": {\n"
            "      \"memberCount\": 3,\n"
            "      \"etcdVersion\": \"3.4.13\"\n"
            "    },\n"
            "    \"backup\": \"2024-01-01T00-00-00Z-1\"\n"
            "  }\n"
            "}");
  // Unset fields are left out, as jsonpb does; an empty message set in a field stays ({}).
  EXPECT_EQ(etcd_manager_cluster_spec_json({}), "{}");
  EXPECT_EQ(etcd_manager_cluster_spec_json({0, "3.5.30"}), "{\n  \"etcdVersion\": \"3.5.30\"\n}");
  EtcdManagerCommand empty_spec;
  empty_spec.restore_backup = EtcdManagerRestoreCommand{{}, "b"};
  EXPECT_EQ(etcd_manager_command_json(empty_spec), "{\n  \"restoreBackup\": {\n    \"clusterSpec\": {},\n    \"backup\": \"b\"\n  }\n}");
  // pkg/commands/vfs.go: MarkClusterCreated uses encoding/json; AddCommand names the directory.
  EXPECT_EQ(etcd_manager_cluster_created_json(1795581998310500426), "{\"timestamp\":1795581998310500426}");
  EXPECT_EQ(etcd_manager_command_dir(from_unix_micros(int64_t{1795581998} * 1000000 + 310500)), "2026-11-25T04:46:38Z-000000");
}

TEST(EtcdManagerControl, ParsersTakeWhatProtojsonTakes) {
  // What etcd-manager's protojson writer writes (a second space after colons, at random but fixed
  // per binary: store-format.md §10).
  auto c = parse_etcd_manager_command(
      "{\n  \"timestamp\":  \"1795581998310500426\",\n  \"restoreBackup\":  {\n    \"clusterSpec\":  {\n"
      "      \"memberCount\":  3,\n      \"etcdVersion\":  \"3.5.30\"\n    },\n    \"backup\":  \"x\"\n  }\n}",
      "a");
  EXPECT_EQ(c.timestamp_nanos, 1795581998310500426);
  ASSERT_TRUE(c.restore_backup);
  EXPECT_EQ(c.restore_backup->cluster_spec, (EtcdManagerClusterSpec{3, "3.5.30"}));
  EXPECT_EQ(c.restore_backup->backup, "x");
  // Proto field names, numbers as strings or numbers, null as unset, unknown fields ignored.
  auto s = parse_etcd_manager_command(
      R"({"timestamp":5,"restore_backup":{"cluster_spec":{"member_count":"5","etcd_version":"3.6.11"},"backup":"y"},"future":1})", "b");
  EXPECT_EQ(s.timestamp_nanos, 5);
  EXPECT_EQ(s.restore_backup->cluster_spec, (EtcdManagerClusterSpec{5, "3.6.11"}));
  EXPECT_EQ(parse_etcd_manager_cluster_spec(R"({"memberCount":null,"etcdVersion":"3.5.30"})", "c"),
            (EtcdManagerClusterSpec{0, "3.5.30"}));
  EXPECT_EQ(parse_etcd_manager_cluster_created(R"({"timestamp":1795581998310500426})", "d"), 1795581998310500426);
  for (const char* bad : {"{not json", "[]", R"({"memberCount":"three"})", R"({"memberCount":3.5})",
                          R"({"etcdVersion":3})", R"({"memberCount":99999999999})"}) {
    try {
      parse_etcd_manager_cluster_spec(bad, "spec-file");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << bad;
      EXPECT_NE(std::string(e.what()).find("spec-file"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_etcd_manager_command(R"({"restoreBackup":"x"})", "e"), Error);
}

TEST(EtcdManagerMeta, SnakeCaseFieldNamesAreAcceptedAsJsonpbDoes) {
  auto m = parse_etcd_manager_meta(R"({"etcd_version":"3.5.30","timestamp":"1560935018","cluster_spec":{"member_count":3}})", "a");
  EXPECT_EQ(m.etcd_version, "3.5.30");
  EXPECT_EQ(*m.timestamp, 1560935018);
  EXPECT_EQ(m.member_count, 3);
  auto n = parse_etcd_manager_meta(R"({"timestamp":1,"cluster_spec":{"etcd_version":"3.4.13","member_count":"5"}})", "b");
  EXPECT_EQ(n.etcd_version, "3.4.13");
  EXPECT_EQ(n.member_count, 5);
}

TEST(EtcdManagerRestoreRule, OnlyWhatItsRestoreCanTake) {
  EXPECT_FALSE(etcd_manager_restore_blocker("etcd.backup.gz", false, true, "3.4.23"));
  EXPECT_FALSE(etcd_manager_restore_blocker("etcd.backup.gz", false, true, "3.5.35"));
  EXPECT_FALSE(etcd_manager_restore_blocker("etcd.backup.gz", false, true, "v3.6.16"));
  EXPECT_FALSE(etcd_manager_restore_blocker("etcd.backup.gz", false, true, "3.0.17"));
  auto has = [](const std::optional<std::string>& why, const std::string& text) {
    return why && why->find(text) != std::string::npos;
  };
  EXPECT_TRUE(has(etcd_manager_restore_blocker("etcd.backup.zst", false, true, "3.5.35"), "etcd.backup.zst"));
  EXPECT_TRUE(has(etcd_manager_restore_blocker("etcd.backup", false, true, "3.5.35"), "downloads only etcd.backup.gz"));
  EXPECT_TRUE(has(etcd_manager_restore_blocker("etcd.backup.gz.age", true, true, "3.5.35"), "encrypted"));
  EXPECT_TRUE(has(etcd_manager_restore_blocker("etcd.backup.gz", false, false, "3.5.35"), "--skip-hash-check"));
  EXPECT_TRUE(has(etcd_manager_restore_blocker("etcd.backup.gz", false, true, ""), "no etcd version"));
  EXPECT_TRUE(has(etcd_manager_restore_blocker("etcd.backup.gz", false, true, "3.7.3"), "3.0 to 3.6 only"));
  EXPECT_TRUE(has(etcd_manager_restore_blocker("etcd.backup.gz", false, true, "2.3.8"), "3.0 to 3.6 only"));
  EXPECT_TRUE(has(etcd_manager_restore_blocker("etcd.backup.gz", false, true, "latest"), "3.0 to 3.6 only"));
}

// Layout 3: a plain backup without _etcd_backup.meta is complete by its metadata and data file,
// and the marker says so, so that an older etcdadm refuses the store instead of pruning them.
TEST(EtcdManagerLayout, BackupsEtcdManagerCannotRestoreAreCompleteByTheirMetadataInALayout3Store) {
  test::TempDir dir;
  LocalStore store(dir.path());
  EXPECT_EQ(ensure_store_settings(store, {Compression::kZstd, std::nullopt, {}}).layout_version, kEtcdadmOnlyBackupsLayoutVersion);
  test::TempDir gz_dir;
  LocalStore gz(gz_dir.path());
  EXPECT_EQ(ensure_store_settings(gz, {Compression::kGzip, std::nullopt, {}}).layout_version, kLayoutVersion);
  allow_etcdadm_only_backups(gz);
  EXPECT_EQ(read_store_settings(gz)->layout_version, kEtcdadmOnlyBackupsLayoutVersion);
  EXPECT_EQ(read_store_settings(gz)->compression, Compression::kGzip);
  allow_etcdadm_only_backups(gz);  // once is enough
  EXPECT_EQ(read_store_settings(gz)->layout_version, kEtcdadmOnlyBackupsLayoutVersion);

  test::TempDir bare_dir;
  LocalStore bare(bare_dir.path());
  EXPECT_THROW(allow_etcdadm_only_backups(bare), Error);  // no marker: nothing says layout 3

  // A newer layout is refused by this reader, as layout 3 is by etcdadm before it.
  EXPECT_THROW(parse_store_settings(R"({"layoutVersion":4,"compression":"gzip"})", "m"), Error);
  EXPECT_EQ(parse_store_settings(R"({"layoutVersion":3,"compression":"gzip"})", "m").layout_version, 3);

  store.write_small("2026-01-01T00:00:00Z-000001/etcd.backup.zst", "x");
  store.write_small("2026-01-01T00:00:00Z-000001/etcdadm-backup.json", "{}");
  store.write_small("2026-01-01T00:00:00Z-000002/etcdadm-backup.json", "{}");  // a data file deleted by a killed prune
  auto listed = scan_backups(store);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].completion_key, "2026-01-01T00:00:00Z-000001/etcdadm-backup.json");
}

// A store written before this rule holds a zstd backup with _etcd_backup.meta, an etcd-manager
// file without a version, and a queued restore of the zstd one: check names all three and --fix
// takes the zstd backup off etcd-manager's list, which etcdadm still lists.
TEST(EtcdManagerCheck, FindsWhatEtcdManagerWouldFailOnAndFixesWhatEtcdadmDescribes) {
  test::TempDir dir;
  LocalStore store(dir.path());
  store.write_small(kStoreMarkerFile, R"({"layoutVersion":1,"compression":"zstd"})");
  const std::string zst = "2026-01-01T00:00:00Z-000001", bare = "2026-01-01T00:00:00Z-000002", good = "2026-01-01T00:00:00Z-000003";
  BackupMeta m;
  m.name = zst;
  m.data_file = "etcd.backup.zst";
  m.compression = Compression::kZstd;
  m.etcd_version = "3.5.35";
  store.write_small(zst + "/etcd.backup.zst", "x");
  store.write_small(zst + "/" + kBackupMetaFile, backup_meta_to_json(m));
  store.write_small(zst + "/" + kEtcdManagerMetaFile, etcd_manager_meta_json("3.5.35", 1, 3));
  store.write_small(bare + "/etcd.backup.gz", "x");
  store.write_small(bare + "/" + kEtcdManagerMetaFile, R"({"timestamp":"1"})");
  test::write_synthetic_backup(store, good);
  EtcdManagerCommand cmd;
  cmd.restore_backup = EtcdManagerRestoreCommand{{3, "3.5.30"}, zst};
  std::string key = add_etcd_manager_command(store, cmd, std::chrono::system_clock::now());

  auto listed = etcd_manager_listings(store);
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_TRUE(listed[0].blocker);
  EXPECT_TRUE(listed[1].blocker);
  EXPECT_FALSE(listed[2].blocker) << *listed[2].blocker;

  auto found = check_etcd_manager_store(store, /*fix=*/false);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].name, zst);
  EXPECT_EQ(found[1].name, bare);
  EXPECT_EQ(found[2].command_key, key);
  EXPECT_TRUE(store.stat(zst + "/" + kEtcdManagerMetaFile));

  found = check_etcd_manager_store(store, /*fix=*/true);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_TRUE(found[0].hidden);
  EXPECT_FALSE(found[1].hidden) << "without etcdadm metadata it would vanish";
  EXPECT_FALSE(store.stat(zst + "/" + kEtcdManagerMetaFile));
  EXPECT_EQ(read_store_settings(store)->layout_version, kEtcdadmOnlyBackupsLayoutVersion);
  std::vector<std::string> names;
  for (const auto& l : scan_backups(store)) names.push_back(l.name);
  EXPECT_EQ(names, (std::vector<std::string>{zst, bare, good}));

  // The queue: a second command in the same second is refused, never written over the first.
  add_etcd_manager_command(store, cmd, from_unix_micros(0));
  try {
    add_etcd_manager_command(store, cmd, from_unix_micros(0));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAlreadyExists);
  }
  auto queue = list_etcd_manager_commands(store);
  ASSERT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue[0].timestamp_nanos, 0) << "oldest first";
  remove_etcd_manager_command(store, queue[0]);
  EXPECT_EQ(list_etcd_manager_commands(store).size(), 1u);
}

}  // namespace
}  // namespace etcdadm

// The backup metadata etcd-manager reads (_etcd_backup.meta), moved here from layout_test.cc.
#include <nlohmann/json.hpp>

namespace etcdadm {

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

}  // namespace etcdadm

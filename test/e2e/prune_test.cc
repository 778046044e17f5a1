// `etcdadm backup prune` on a local store of synthetic backups spanning years.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/fs.h"
#include "store/layout.h"
#include "store/backend/local/local_store.h"
#include "test/support/cli_fixture.h"

namespace etcdadm::test {
namespace {

class Prune : public CliTest {};

TEST_F(Prune, DryRunShowsAndRealRunDeletesMarkerFirst) {
  LocalStore store(store_);
  std::vector<std::string> names = {"2021-03-01T00:00:00Z-000001", "2024-06-01T12:00:00Z-000001",
                                    "2026-11-20T10:00:00Z-000001", "2026-11-21T08:00:00Z-000001",
                                    "2026-11-21T09:00:00Z-000002"};
  for (const auto& n : names) write_synthetic_backup(store, n);
  write_synthetic_backup(store, "manual-copy");  // not a backup time: never pruned

  auto dry = cli_json({"backup", "prune", "--store", store_, "--policy", "count:2", "--dry-run", "-o", "json"});
  EXPECT_EQ(dry["delete"], nlohmann::json({"2026-11-20T10:00:00Z-000001", "2024-06-01T12:00:00Z-000001",
                                           "2021-03-01T00:00:00Z-000001"}));
  EXPECT_EQ(dry["unparseable"], nlohmann::json({"manual-copy"}));
  EXPECT_TRUE(path_exists(store_ + "/2021-03-01T00:00:00Z-000001/etcd.backup.gz")) << "a dry run deletes nothing";

  auto r = cli({"backup", "prune", "--store", store_, "--policy", "count:2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("deleted 2021-03-01T00:00:00Z-000001"), std::string::npos) << r.output;
  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  std::vector<std::string> left;
  for (const auto& b : listed) left.push_back(b["backup"]);
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"2026-11-21T08:00:00Z-000001", "2026-11-21T09:00:00Z-000002", "manual-copy"}));
  EXPECT_FALSE(path_exists(store_ + "/2021-03-01T00:00:00Z-000001/etcd.backup.gz"));

  // An interrupted prune leaves a directory without its marker: the next prune finishes it off.
  write_synthetic_backup(store, "2025-01-01T00:00:00Z-000001");
  store.remove("2025-01-01T00:00:00Z-000001/_etcd_backup.meta");
  r = cli({"backup", "prune", "--store", store_, "--policy", "count:2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(path_exists(store_ + "/2025-01-01T00:00:00Z-000001/etcd.backup.gz"));

  auto bad = cli({"backup", "prune", "--store", store_, "--policy", "forever"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("invalid retention policy"), std::string::npos) << bad.output;
}

std::vector<std::string> listed_names(const nlohmann::json& list) {
  std::vector<std::string> out;
  for (const auto& b : list) out.push_back(b["backup"]);
  std::sort(out.begin(), out.end());
  return out;
}

std::string backup_name_ago(std::chrono::seconds ago) { return make_backup_name(std::chrono::system_clock::now() - ago); }

// A store writer (or a host whose clock ran ahead) adds entries that look like backups: dated in
// 2099, with metadata that does not parse, or naming no data file. None of them may fill count:N,
// a GFS bucket or the newest slot and push the real backups out (before the fix, count:2 deleted
// every real backup here); they are kept and reported, never counted.
TEST_F(Prune, EntriesThatAreNotWholeBackupsOrFromTheFutureFillNoQuota) {
  using std::chrono::hours;
  using std::chrono::minutes;
  LocalStore store(store_);
  const std::vector<std::string> real = {backup_name_ago(minutes(10)), backup_name_ago(hours(2)),
                                         backup_name_ago(hours(3)), backup_name_ago(hours(24 * 30))};
  for (const auto& n : real) write_synthetic_backup(store, n);
  std::vector<std::string> forged;
  for (int i = 1; i <= 5; ++i) {  // the meta file alone: what made a backup before
    std::string n = "2099-01-0" + std::to_string(i) + "T00:00:00Z-000001";
    store.write_small(n + "/_etcd_backup.meta", R"({"etcdVersion":"3.4.23","timestamp":4070908800})");
    forged.push_back(n);
  }
  std::string garbage_meta = backup_name_ago(minutes(5));
  store.write_small(garbage_meta + "/etcd.backup.gz", "x");
  store.write_small(garbage_meta + "/_etcd_backup.meta", "not json");
  std::string no_data = backup_name_ago(minutes(1));  // our metadata naming a file that is not there
  write_synthetic_backup(store, no_data);
  store.write_small(no_data + "/etcdadm-backup.json",
                    R"({"layoutVersion":1,"dataFile":"etcd.backup.gz","compression":"gzip","storedSize":999})");
  store.remove(no_data + "/etcd.backup.gz");
  store.write_small(no_data + "/etcd.backup.zst", "a data file under another name");

  // (--log-level error: the warnings about each entry would come before the JSON)
  auto plan = cli_json({"--log-level", "error", "backup", "prune", "--store", store_, "--policy", "count:2", "--dry-run",
                        "-o", "json"});
  EXPECT_EQ(plan["delete"], nlohmann::json({real[2], real[3]})) << plan.dump(2);
  EXPECT_EQ(plan["future"].size(), 5u) << plan.dump(2);
  ASSERT_EQ(plan["notWhole"].size(), 2u) << plan.dump(2);
  EXPECT_EQ(plan["notWhole"][0]["backup"], no_data);
  EXPECT_NE(plan["notWhole"][0]["why"].get<std::string>().find("does not hold"), std::string::npos) << plan.dump(2);
  EXPECT_EQ(plan["notWhole"][1]["backup"], garbage_meta);
  EXPECT_NE(plan["notWhole"][1]["why"].get<std::string>().find("cannot be read"), std::string::npos) << plan.dump(2);

  for (const char* policy : {"gfs:1,1,0,0", "etcd-manager"}) {
    auto p = cli_json({"--log-level", "error", "backup", "prune", "--store", store_, "--policy", policy, "--dry-run",
                       "-o", "json"});
    auto keep = p["keep"].get<std::vector<std::string>>();
    EXPECT_NE(std::find(keep.begin(), keep.end(), real[0]), keep.end()) << policy << ": " << p.dump(2);
    for (const auto& f : forged) EXPECT_NE(std::find(keep.begin(), keep.end(), f), keep.end()) << policy;
  }

  auto r = cli({"backup", "prune", "--store", store_, "--policy", "count:2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("left alone, not counted (dated after this host's clock): " + forged[0]), std::string::npos)
      << r.output;
  for (const auto& n : {real[0], real[1]}) EXPECT_TRUE(path_exists(store_ + "/" + n + "/etcd.backup.gz")) << n;
  for (const auto& n : {real[2], real[3]}) EXPECT_FALSE(path_exists(store_ + "/" + n)) << n;
  for (const auto& n : forged) EXPECT_TRUE(path_exists(store_ + "/" + n + "/_etcd_backup.meta")) << n;
}

// All real backups look old (no saves for days, or this host's clock is ahead): a prune that would
// delete some of them without leaving one younger than the policy's shortest period is refused,
// names the flag that overrides it, and deletes nothing; with the flag it goes ahead.
TEST_F(Prune, APlanLeavingNoRecentBackupIsRefusedUnlessAllowed) {
  using std::chrono::hours;
  LocalStore store(store_);
  const std::vector<std::string> names = {backup_name_ago(hours(50)), backup_name_ago(hours(26)),
                                          backup_name_ago(hours(25)), backup_name_ago(hours(24 * 900))};
  for (const auto& n : names) write_synthetic_backup(store, n);

  for (const char* policy : {"etcd-manager", "gfs:1,1,0,0"}) {
    auto refused = cli({"backup", "prune", "--store", store_, "--policy", policy});
    EXPECT_EQ(refused.exit_code, 2) << policy << ": " << refused.output;
    EXPECT_NE(refused.output.find("refusing to prune: the store holds no whole backup younger than 1h"),
              std::string::npos)
        << refused.output;
    EXPECT_NE(refused.output.find("--allow-no-recent-backup"), std::string::npos) << refused.output;
    EXPECT_EQ(listed_names(cli_json({"backup", "list", "--store", store_, "-o", "json"})).size(), 4u) << policy;
  }
  // count:N does not look at time: it prunes.
  auto counted = cli({"backup", "prune", "--store", store_, "--policy", "count:3"});
  ASSERT_EQ(counted.exit_code, 0) << counted.output;
  EXPECT_FALSE(path_exists(store_ + "/" + names[3]));

  auto forced = cli({"backup", "prune", "--store", store_, "--policy", "gfs:1,1,0,0", "--allow-no-recent-backup"});
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_EQ(listed_names(cli_json({"backup", "list", "--store", store_, "-o", "json"})),
            std::vector<std::string>{names[2]})
      << forced.output;
}

}  // namespace
}  // namespace etcdadm::test

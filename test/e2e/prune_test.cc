// `etcdadm backup prune` on a local store of synthetic backups spanning years.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/fs.h"
#include "store/local_store.h"
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
  for (const auto& b : listed) left.push_back(b["name"]);
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

}  // namespace
}  // namespace etcdadm::test

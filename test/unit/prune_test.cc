// Tests of backup/prune.{h,cc}: deleting what a retention policy lets go, keeping what the store
// locks.
#include "backup/prune.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "backup/retention.h"
#include "store/blob_capabilities.h"
#include "store/layout.h"
#include "store/backend/local/local_store.h"
#include "test/support/backup_names.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

using test::kNow;
using test::name;

// A store that locks some keys, as S3 Object Lock or a GCS hold would.
class LockingStore : public LocalStore, public BlobLocks {
 public:
  using LocalStore::LocalStore;
  std::map<std::string, Lock> locks;  // by key
  std::optional<Lock> lock_of(const std::string& key) override {
    auto it = locks.find(key);
    if (it == locks.end()) return std::nullopt;
    return it->second;
  }
};

// Prune keeps what the store locks, says until when (or that a hold keeps it), deletes the rest the
// policy lets go, and never touches a locked backup's files.
TEST(Prune, LockedBackupsAreKeptAndReported) {
  test::TempDir dir;
  LockingStore store(dir / "store");
  const std::vector<std::string> names = {name("2026-11-18T00:00:00Z"), name("2026-11-19T00:00:00Z"),
                                          name("2026-11-20T00:00:00Z"), name("2026-11-21T00:00:00Z")};
  for (const auto& n : names) test::write_synthetic_backup(store, n);
  const int64_t until = to_unix_micros(*parse_rfc3339("2026-11-28T00:00:00Z"));
  store.locks[names[0] + "/etcd.backup.gz"] = {until, "Object Lock compliance mode"};
  store.locks[names[1] + "/" + kEtcdManagerMetaFile] = {0, "a GCS temporary hold"};
  PruneResult r = prune_backups(store, nullptr, parse_retention_policy("count:1", test::fake_environment({}, "/")), kNow);
  ASSERT_EQ(r.locked.size(), 2u);
  // In the plan's order, newest first.
  EXPECT_EQ(r.locked[0].first, names[1]);
  EXPECT_EQ(r.locked[0].second, "kept until the hold is released (a GCS temporary hold)");
  EXPECT_EQ(r.locked[1].first, names[0]);
  EXPECT_EQ(r.locked[1].second, "kept until 2026-11-28T00:00:00Z (Object Lock compliance mode)");
  EXPECT_EQ(r.deleted, std::vector<std::string>{names[2]});
  std::vector<std::string> left;
  for (const auto& l : scan_backups(store)) left.push_back(l.name);
  EXPECT_EQ(left, (std::vector<std::string>{names[0], names[1], names[3]}));
}

}  // namespace
}  // namespace etcdadm

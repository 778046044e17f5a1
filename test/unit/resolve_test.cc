#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "restore/damage.h"
#include "restore/resolve.h"

namespace etcdadm {

static std::vector<BackupRecord> records(std::initializer_list<const char*> names) {
  std::vector<BackupRecord> out;
  for (const char* n : names) {
    BackupRecord r;
    r.name = n;
    r.data_file = "etcd.backup.gz";
    r.taken_at_micros = to_unix_micros(parse_backup_name(n)->time);
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.taken_at_micros > b.taken_at_micros; });
  return out;
}

TEST(Resolve, LatestExactAndUniquePrefix) {
  auto rs = records({"2026-11-20T10:00:00Z-000001", "2026-11-21T10:00:00Z-000002", "2026-11-21T11:30:00Z-000003"});
  EXPECT_EQ(resolve_backup(rs, "latest", "s").name, "2026-11-21T11:30:00Z-000003");
  EXPECT_EQ(resolve_backup(rs, "2026-11-20T10:00:00Z-000001", "s").name, "2026-11-20T10:00:00Z-000001");
  EXPECT_EQ(resolve_backup(rs, "2026-11-21T10", "s").name, "2026-11-21T10:00:00Z-000002");
}

TEST(Resolve, AmbiguousPrefixListsMatches) {
  auto rs = records({"2026-11-21T10:00:00Z-000002", "2026-11-21T11:30:00Z-000003"});
  try {
    resolve_backup(rs, "2026-11-21", "s");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("2026-11-21T10:00:00Z-000002"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("2026-11-21T11:30:00Z-000003"), std::string::npos);
  }
}

TEST(Resolve, UnknownNamesNearestInTime) {
  auto rs = records({"2026-01-01T00:00:00Z-000000", "2026-06-01T00:00:00Z-000000", "2026-06-02T00:00:00Z-000000",
                     "2026-12-01T00:00:00Z-000000"});
  try {
    resolve_backup(rs, "2026-06-01T12:00:00Z-000000", "s");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    std::string msg = e.what();
    // The two June backups are the nearest, named before the others.
    auto june1 = msg.find("2026-06-01T00"), june2 = msg.find("2026-06-02T00"), jan = msg.find("2026-01-01");
    ASSERT_NE(june1, std::string::npos);
    ASSERT_NE(june2, std::string::npos);
    EXPECT_LT(june1, jan);
    EXPECT_LT(june2, jan);
  }
  EXPECT_THROW(resolve_backup({}, "latest", "s"), Error);
}

}  // namespace etcdadm

namespace etcdadm {

// `latest` is the newest backup not known to be damaged; a damaged one named on purpose is still
// used (it is checked again); one whose metadata is unreadable is refused, naming the next one.
TEST(Resolve, LatestSkipsDamagedBackups) {
  auto rs = records({"2026-11-20T10:00:00Z-000001", "2026-11-21T10:00:00Z-000002", "2026-11-21T11:30:00Z-000003"});
  rs[0].damage = DamageRecord{1, "stored data does not match its recorded SHA-256", "", true};
  EXPECT_EQ(resolve_backup(rs, "latest", "s").name, "2026-11-21T10:00:00Z-000002");
  EXPECT_EQ(resolve_backup(rs, "2026-11-21T11", "s").name, "2026-11-21T11:30:00Z-000003");
  rs[0].format = kUnreadableFormat;
  try {
    resolve_backup(rs, "2026-11-21T11", "s");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
    EXPECT_NE(e.hint().find("2026-11-21T10:00:00Z-000002"), std::string::npos) << e.hint();
  }
  for (auto& r : rs) r.damage = DamageRecord{1, "bad", "", false};
  try {
    resolve_backup(rs, "latest", "s");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("every backup"), std::string::npos) << e.what();
  }
}

// A store's garbage is never `latest`: a directory dated in the future holding only an
// `_etcd_backup.meta` of `{}` (no data file), or a whole one dated beyond a clock's tolerance.
// The next candidate after a damaged one skips them too.
TEST(Resolve, LatestIsNeverAnEntryWithoutDataOrDatedInTheFuture) {
  auto rs = records({"2099-01-01T00:00:00Z-000001", "2099-01-01T00:00:00Z-000002", "2026-11-21T10:00:00Z-000003",
                     "2026-11-21T11:30:00Z-000004"});
  const SystemTime now = parse_backup_name("2026-11-21T12:00:00Z-000000")->time;
  auto named = [&](const std::string& name) -> BackupRecord& {
    return *std::find_if(rs.begin(), rs.end(), [&](const BackupRecord& r) { return r.name == name; });
  };
  named("2099-01-01T00:00:00Z-000001").data_file.clear();  // `{}` as _etcd_backup.meta
  EXPECT_EQ(resolve_backup(rs, "latest", "s", now).name, "2026-11-21T11:30:00Z-000004");
  const std::string no_data = why_not_latest(named("2099-01-01T00:00:00Z-000001"), now);
  EXPECT_NE(no_data.find("names no data file"), std::string::npos) << no_data;
  const std::string future = why_not_latest(named("2099-01-01T00:00:00Z-000002"), now);
  EXPECT_NE(future.find("in the future"), std::string::npos) << future;
  ASSERT_EQ(rs[2].name, "2026-11-21T11:30:00Z-000004");
  // Seconds ahead (another writer's clock) are no future: within the tolerance.
  EXPECT_EQ(why_not_latest(rs[2], parse_backup_name("2026-11-21T11:28:00Z-000000")->time), "");
  EXPECT_NE(why_not_latest(rs[2], parse_backup_name("2026-11-21T11:20:00Z-000000")->time), "");
  rs[2].damage = DamageRecord{1, "bad", "", true};
  EXPECT_EQ(next_intact_candidate(rs, rs[2].name)->name, "2026-11-21T10:00:00Z-000003");
  EXPECT_EQ(next_intact_candidate(rs, rs[0].name)->name, "2026-11-21T10:00:00Z-000003")
      << "the 2099 entries are passed over, wherever the search starts";
}

}  // namespace etcdadm

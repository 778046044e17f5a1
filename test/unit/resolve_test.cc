#include <gtest/gtest.h>

#include "common/error.h"
#include "restore/resolve.h"

namespace etcdadm {

static std::vector<BackupRecord> records(std::initializer_list<const char*> names) {
  std::vector<BackupRecord> out;
  for (const char* n : names) {
    BackupRecord r;
    r.name = n;
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

}  // namespace etcdadm

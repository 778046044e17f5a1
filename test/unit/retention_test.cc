// Tests of backup/retention.{h,cc}: retention policies on synthetic backup names spanning years,
// with hour/day edges, a single backup, future dates and names that do not parse.
#include "backup/retention.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "test/support/backup_names.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

using test::kNow;
using test::name;

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

RetentionPolicy policy(const std::string& spec, std::map<std::string, std::string> env = {}) {
  return parse_retention_policy(spec, test::fake_environment(std::move(env)));
}

TEST(Retention, EtcdManagerKeepsRecentHourlyDailyAndDropsTheRest) {
  std::vector<std::string> names = {
      name("2026-11-21T12:10:00Z"), name("2026-11-21T11:45:00Z"),  // < 1 h: all kept
      name("2026-11-21T11:20:00Z"), name("2026-11-21T11:10:00Z"),  // hour 11: earliest kept
      name("2026-11-21T10:50:00Z"), name("2026-11-21T10:05:00Z"),  // hour 10: earliest kept
      name("2026-11-21T00:00:00Z"), name("2026-11-20T23:59:59Z"),  // hour edge: two hours, both kept
      name("2026-11-14T00:00:00Z"), name("2026-11-13T23:59:59Z"),  // day edge past 7 d: two days
      name("2026-11-10T20:00:00Z"), name("2026-11-10T03:00:00Z"),  // one day: earliest kept
      name("2025-01-01T00:00:00Z"),                                // < 2 y: kept
      name("2024-06-01T00:00:00Z"),                                // > 2 y: removed
      "latest", "2026-13-01T00:00:00Z-000001",                     // unparseable: never touched
  };
  RetentionPlan p = plan_retention(names, kNow, policy("etcd-manager"));
  EXPECT_EQ(sorted(p.remove), sorted({name("2026-11-21T11:20:00Z"), name("2026-11-21T10:50:00Z"),
                                      name("2026-11-10T20:00:00Z"), name("2024-06-01T00:00:00Z")}));
  EXPECT_EQ(p.keep.size(), 10u);
  EXPECT_EQ(p.keep.front(), name("2026-11-21T12:10:00Z"));  // newest first
  EXPECT_EQ(sorted(p.unparseable), sorted({"latest", "2026-13-01T00:00:00Z-000001"}));

  // etcd-manager's variables shorten the windows.
  RetentionPlan q = plan_retention(names, kNow, policy("etcd-manager", {{"ETCD_MANAGER_DAILY_BACKUPS_RETENTION", "1y"},
                                                                        {"ETCD_MANAGER_HOURLY_BACKUPS_RETENTION", "2h"}}));
  EXPECT_NE(std::find(q.remove.begin(), q.remove.end(), name("2025-01-01T00:00:00Z")), q.remove.end());
  // Past 2 h, hour 00 and hour 23 of the 20th become days: one per day.
  EXPECT_NE(std::find(q.keep.begin(), q.keep.end(), name("2026-11-21T00:00:00Z")), q.keep.end());
  EXPECT_NE(std::find(q.keep.begin(), q.keep.end(), name("2026-11-20T23:59:59Z")), q.keep.end());
  EXPECT_NE(std::find(q.remove.begin(), q.remove.end(), name("2026-11-21T10:05:00Z")), q.remove.end());
}

TEST(Retention, CountKeepsTheNewestByParsedTimeNotByText) {
  // Same second, suffixes 9 and 10: as text "…-000010" < "…-000009" would be wrong only for
  // unpadded digits; ours are padded, and the order still comes from the parsed values.
  std::vector<std::string> names = {name("2026-11-21T10:00:00Z", 10), name("2026-11-21T10:00:00Z", 9),
                                    name("2025-11-21T10:00:00Z"), name("2026-11-20T10:00:00Z")};
  RetentionPlan p = plan_retention(names, kNow, policy("count:2"));
  EXPECT_EQ(p.keep, (std::vector<std::string>{name("2026-11-21T10:00:00Z", 10), name("2026-11-21T10:00:00Z", 9)}));
  EXPECT_EQ(sorted(p.remove), sorted({name("2025-11-21T10:00:00Z"), name("2026-11-20T10:00:00Z")}));
}

TEST(Retention, GfsKeepsTheNewestPerHourDayWeekMonth) {
  std::vector<std::string> names = {
      name("2026-11-21T12:20:00Z"), name("2026-11-21T12:05:00Z"),  // hour 12: newest kept (hourly #1)
      name("2026-11-21T11:30:00Z"),                                // hour 11: hourly #2
      name("2026-11-21T09:30:00Z"),                                // hourly budget spent; same day as #1
      name("2026-11-20T18:00:00Z"), name("2026-11-20T06:00:00Z"),  // daily #2: newest of the 20th
      name("2026-11-19T18:00:00Z"),                                // daily budget spent; same ISO week
      name("2026-11-15T10:00:00Z"),                                // Sunday: previous ISO week -> weekly #2
      name("2026-10-02T10:00:00Z"),                                // month 10: monthly #2
      name("2026-09-02T10:00:00Z"),                                // monthly budget spent
  };
  RetentionPlan p = plan_retention(names, kNow, policy("gfs:2,2,2,2"));
  EXPECT_EQ(sorted(p.keep), sorted({name("2026-11-21T12:20:00Z"), name("2026-11-21T11:30:00Z"),
                                    name("2026-11-20T18:00:00Z"), name("2026-11-15T10:00:00Z"),
                                    name("2026-10-02T10:00:00Z")}));
  EXPECT_EQ(p.remove.size(), 5u);
}

TEST(Retention, SafetyRules) {
  // A single, very old backup is the newest: kept by every policy.
  for (const char* spec : {"etcd-manager", "count:1", "gfs:0,0,0,0"}) {
    RetentionPlan p = plan_retention({name("2019-01-01T00:00:00Z")}, kNow, policy(spec));
    EXPECT_EQ(p.keep.size(), 1u) << spec;
    EXPECT_TRUE(p.remove.empty()) << spec;
  }
  // Dated in the future (a skewed clock wrote it): kept, but it is not the newest backup and fills
  // no quota, so count:1 still keeps the newest real one.
  RetentionPlan f = plan_retention({name("2027-01-01T00:00:00Z"), name("2026-11-21T12:00:00Z"), name("2020-01-01T00:00:00Z")},
                                   kNow, policy("count:1"));
  EXPECT_EQ(sorted(f.keep), sorted({name("2027-01-01T00:00:00Z"), name("2026-11-21T12:00:00Z")}));
  EXPECT_EQ(f.remove, std::vector<std::string>{name("2020-01-01T00:00:00Z")});
  EXPECT_EQ(f.future, std::vector<std::string>{name("2027-01-01T00:00:00Z")});
  EXPECT_EQ(f.newest_whole, name("2026-11-21T12:00:00Z"));
  // Nothing at all.
  EXPECT_TRUE(plan_retention(std::vector<std::string>{}, kNow, policy("count:3")).keep.empty());
}

// Entries that only look like backups (forged, damaged, or dated by a clock running ahead) are kept
// and reported, and never fill a quota: whatever is added, the real backups a policy keeps stay.
TEST(Retention, EntriesThatAreNotWholeOrFromTheFutureFillNoQuota) {
  std::vector<RetentionEntry> entries = {
      {name("2026-11-21T12:20:00Z"), ""},
      {name("2026-11-21T11:20:00Z"), ""},
      {name("2026-11-21T10:20:00Z"), ""},
      {name("2026-11-21T12:25:00Z"), "its metadata cannot be read"},
      {name("2026-11-21T12:26:00Z"), "found damaged: hash mismatch"},
  };
  for (int i = 1; i <= 9; ++i) entries.push_back({name("2099-01-01T00:00:0" + std::to_string(i) + "Z"), ""});
  for (const char* spec : {"count:2", "gfs:2,0,0,0"}) {
    RetentionPlan p = plan_retention(entries, kNow, policy(spec));
    EXPECT_EQ(p.remove, std::vector<std::string>{name("2026-11-21T10:20:00Z")}) << spec;
    EXPECT_EQ(p.future.size(), 9u) << spec;
    ASSERT_EQ(p.not_whole.size(), 2u) << spec;
    EXPECT_EQ(p.not_whole[0], std::make_pair(name("2026-11-21T12:26:00Z"), std::string("found damaged: hash mismatch")));
    EXPECT_EQ(p.newest_whole, name("2026-11-21T12:20:00Z")) << spec;
    EXPECT_EQ(p.keep.size(), 13u) << spec;
    EXPECT_TRUE(p.keeps_a_recent_backup) << spec;
  }
  // No whole backup at all: nothing is removed and nothing is the newest.
  RetentionPlan none = plan_retention(std::vector<RetentionEntry>{{name("2026-11-21T12:25:00Z"), "its metadata cannot be read"}}, kNow, policy("count:1"));
  EXPECT_TRUE(none.remove.empty());
  EXPECT_EQ(none.newest_whole, "");
}

// The recency rule prune_backups enforces: each policy's shortest period, and whether a plan keeps
// a whole backup younger than it.
TEST(Retention, ShortestPeriodAndRecentBackup) {
  using std::chrono::hours;
  EXPECT_EQ(policy("etcd-manager").shortest_period(), hours(1));
  EXPECT_EQ(policy("gfs:24,7,4,12").shortest_period(), hours(1));
  EXPECT_EQ(policy("gfs:0,7,4,12").shortest_period(), hours(24));
  EXPECT_EQ(policy("gfs:0,0,4,12").shortest_period(), hours(24 * 7));
  EXPECT_EQ(policy("gfs:0,0,0,12").shortest_period(), hours(24 * 31));
  EXPECT_EQ(policy("gfs:0,0,0,0").shortest_period(), std::nullopt);
  EXPECT_EQ(policy("count:3").shortest_period(), std::nullopt);
  EXPECT_EQ(policy("gfs:1,2,3,4").spec(), "gfs:1,2,3,4");
  EXPECT_EQ(policy("count:7").spec(), "count:7");
  EXPECT_EQ(policy("etcd-manager").spec(), "etcd-manager");

  // Newest 59 min old: recent for etcd-manager. 61 min: not; a whole backup of the future does not help.
  EXPECT_TRUE(plan_retention({name("2026-11-21T11:31:00Z")}, kNow, policy("etcd-manager")).keeps_a_recent_backup);
  RetentionPlan stale =
      plan_retention({name("2026-11-21T11:29:00Z"), name("2099-01-01T00:00:00Z")}, kNow, policy("etcd-manager"));
  EXPECT_FALSE(stale.keeps_a_recent_backup);
  EXPECT_TRUE(plan_retention({name("2019-01-01T00:00:00Z")}, kNow, policy("count:1")).keeps_a_recent_backup);
  EXPECT_TRUE(plan_retention({name("2026-11-21T00:00:00Z")}, kNow, policy("gfs:0,1,0,0")).keeps_a_recent_backup);
  EXPECT_FALSE(plan_retention({name("2026-11-20T12:00:00Z")}, kNow, policy("gfs:0,1,0,0")).keeps_a_recent_backup);
}

TEST(Retention, PolicyParsing) {
  EXPECT_EQ(policy("count:5").count, 5);
  RetentionPolicy g = policy("gfs:24,7,4,12");
  EXPECT_EQ(g.hourly, 24);
  EXPECT_EQ(g.monthly, 12);
  EXPECT_EQ(policy("etcd-manager").daily_for, std::chrono::hours(24 * 365 * 2));
  for (const char* bad : {"", "count", "count:0", "count:-1", "count:x", "gfs:1,2,3", "gfs:a,b,c,d", "forever"}) {
    EXPECT_THROW(policy(bad), Error) << bad;
  }
  EXPECT_THROW(policy("etcd-manager", {{"ETCD_MANAGER_HOURLY_BACKUPS_RETENTION", "soon"}}), Error);
}

}  // namespace
}  // namespace etcdadm

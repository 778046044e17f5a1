// Schedules: known answers for cron fields, macros, intervals and the errors.
#include <gtest/gtest.h>

#include "backup/schedule.h"
#include "common/error.h"

namespace etcdadm {
namespace {

std::string next(const std::string& spec, const std::string& after) {
  return format_rfc3339_seconds(Schedule::parse(spec).next_after(*parse_rfc3339(after)));
}

TEST(Schedule, CronFieldsKnownAnswers) {
  EXPECT_EQ(next("*/15 * * * *", "2026-11-21T10:07:30Z"), "2026-11-21T10:15:00Z");
  EXPECT_EQ(next("*/15 * * * *", "2026-11-21T10:15:00Z"), "2026-11-21T10:30:00Z");  // strictly after
  EXPECT_EQ(next("0 */6 * * *", "2026-11-21T10:07:00Z"), "2026-11-21T12:00:00Z");
  EXPECT_EQ(next("5/20 * * * *", "2026-11-21T10:26:00Z"), "2026-11-21T10:45:00Z");
  EXPECT_EQ(next("0-10/5,58 23 * * *", "2026-11-21T23:10:00Z"), "2026-11-21T23:58:00Z");
  EXPECT_EQ(next("0 9 * JAN-MAR MON-FRI", "2026-11-21T00:00:00Z"), "2027-01-01T09:00:00Z");  // a Friday
  EXPECT_EQ(next("0 0 29 2 *", "2026-03-01T00:00:00Z"), "2028-02-29T00:00:00Z");
  EXPECT_EQ(next("0 0 29 2 *", "2097-03-01T00:00:00Z"), "2104-02-29T00:00:00Z");  // 2100 is no leap year
}

TEST(Schedule, DayOfMonthOrDayOfWeekWhenBothAreRestricted) {
  // Vixie cron: the 1st, the 15th, or any Friday.
  EXPECT_EQ(next("30 4 1,15 * 5", "2026-11-21T00:00:00Z"), "2026-11-27T04:30:00Z");
  EXPECT_EQ(next("30 4 1,15 * 5", "2026-11-27T05:00:00Z"), "2026-12-01T04:30:00Z");
  // Only one restricted: it alone decides.
  EXPECT_EQ(next("0 0 * * fri", "2026-11-21T00:00:00Z"), "2026-11-27T00:00:00Z");
  EXPECT_EQ(next("0 0 * * 7", "2026-11-21T00:00:00Z"), "2026-11-22T00:00:00Z");  // 7 = Sunday
}

TEST(Schedule, Macros) {
  EXPECT_EQ(next("@hourly", "2026-11-21T10:00:00Z"), "2026-11-21T11:00:00Z");
  EXPECT_EQ(next("@daily", "2026-12-31T23:59:59Z"), "2027-01-01T00:00:00Z");
  EXPECT_EQ(next("@midnight", "2026-11-21T10:00:00Z"), "2026-11-22T00:00:00Z");
  EXPECT_EQ(next("@weekly", "2026-11-21T10:00:00Z"), "2026-11-22T00:00:00Z");  // Sunday 00:00
  EXPECT_EQ(next("@monthly", "2026-11-21T10:00:00Z"), "2026-12-01T00:00:00Z");
  EXPECT_EQ(next("@yearly", "2026-11-21T10:00:00Z"), "2027-01-01T00:00:00Z");
}

TEST(Schedule, Intervals) {
  EXPECT_EQ(next("@every 15m", "2026-11-21T10:07:30Z"), "2026-11-21T10:22:30Z");
  EXPECT_EQ(next("90s", "2026-11-21T10:07:30Z"), "2026-11-21T10:09:00Z");
  EXPECT_EQ(next("@every 1h30m", "2026-11-21T23:00:00Z"), "2026-11-22T00:30:00Z");
  EXPECT_TRUE(Schedule::parse("@every 2s").is_interval());
  EXPECT_FALSE(Schedule::parse("@hourly").is_interval());
}

TEST(Schedule, BadSpecsAreRejectedWithTheReason) {
  for (const char* bad : {"", "* * * *", "* * * * * *", "61 * * * *", "*/0 * * * *", "1-x * * * *", "5-1 * * * *",
                          "@often", "@every", "@every 0s", "@every 100ms", "0 0 31 2 *", "0 0 * 13 *", "0 0 * * 8",
                          "0 0 * FOO *"}) {
    try {
      Schedule::parse(bad);
      ADD_FAILURE() << "accepted: '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("schedule"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace etcdadm

namespace etcdadm {
namespace {

// CRON_TZ: times in a named zone, across both DST changes (Europe/Berlin: CET = UTC+1, CEST = UTC+2).
TEST(Schedule, CronTimeZone) {
  Schedule berlin = Schedule::parse("CRON_TZ=Europe/Berlin 0 2 * * *");
  EXPECT_EQ(berlin.time_zone(), "Europe/Berlin");
  EXPECT_THROW(berlin.next_after(*parse_rfc3339("2026-11-21T00:00:00Z")), Error) << "TZ not applied";
  const char* old = std::getenv("TZ");
  std::string saved = old ? old : "";
  apply_schedule_time_zone(berlin);
  auto at = [&](const Schedule& s, const char* t) { return format_rfc3339_seconds(s.next_after(*parse_rfc3339(t))); };
  EXPECT_EQ(at(berlin, "2026-11-21T00:00:00Z"), "2026-11-21T01:00:00Z");  // 02:00 CET
  EXPECT_EQ(at(berlin, "2026-07-01T00:00:00Z"), "2026-07-02T00:00:00Z");  // 02:00 CEST, strictly after
  // Spring forward (2026-03-29 02:00 -> 03:00): 02:30 does not exist that day and is skipped.
  Schedule half = Schedule::parse("TZ=Europe/Berlin 30 2 * * *");
  EXPECT_EQ(at(half, "2026-03-28T12:00:00Z"), "2026-03-30T00:30:00Z");
  // Fall back (2026-10-25 03:00 -> 02:00): 02:30 happens twice, and so does the job.
  EXPECT_EQ(at(half, "2026-10-24T12:00:00Z"), "2026-10-25T00:30:00Z");
  EXPECT_EQ(at(half, "2026-10-25T00:30:00Z"), "2026-10-25T01:30:00Z");
  EXPECT_EQ(at(half, "2026-10-25T01:30:00Z"), "2026-10-26T01:30:00Z");
  // An hourly job keeps firing every real hour through the change (02:00 CEST, then 02:00 CET).
  Schedule hourly = Schedule::parse("CRON_TZ=Europe/Berlin 0 * * * *");
  EXPECT_EQ(at(hourly, "2026-10-25T00:00:00Z"), "2026-10-25T01:00:00Z");
  if (saved.empty()) {
    ::unsetenv("TZ");
  } else {
    ::setenv("TZ", saved.c_str(), 1);
  }
  ::tzset();
  EXPECT_THROW(Schedule::parse("CRON_TZ=Mars/Olympus 0 2 * * *"), Error);
  EXPECT_THROW(Schedule::parse("CRON_TZ=Europe/Berlin @every 1h"), Error);
  EXPECT_EQ(Schedule::parse("CRON_TZ=UTC 0 2 * * *").time_zone(), "");
}

}  // namespace
}  // namespace etcdadm

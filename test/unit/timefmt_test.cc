// Tests of common/timefmt.{h,cc}: RFC 3339 times, durations and HTTP dates.
#include <gtest/gtest.h>

#include "common/timefmt.h"

namespace etcdadm {

TEST(TimeFormat, Rfc3339KnownAnswers) {
  // 1560935018 is the etcd-manager example timestamp: 2019-06-19T09:03:38Z.
  auto t = from_unix_micros(int64_t{1560935018} * 1000000 + 977);
  EXPECT_EQ(format_rfc3339_seconds(t), "2019-06-19T09:03:38Z");
  EXPECT_EQ(format_rfc3339_micros(t), "2019-06-19T09:03:38.000977Z");
  EXPECT_EQ(format_rfc3339_seconds(from_unix_micros(0)), "1970-01-01T00:00:00Z");
}

TEST(TimeFormat, ParsesOffsetsAndFractions) {
  EXPECT_EQ(to_unix_micros(*parse_rfc3339("2019-06-19T09:03:38Z")), int64_t{1560935018} * 1000000);
  EXPECT_EQ(to_unix_micros(*parse_rfc3339("2019-06-19T11:03:38+02:00")), int64_t{1560935018} * 1000000);
  EXPECT_EQ(to_unix_micros(*parse_rfc3339("2019-06-19T09:03:38.5Z")), int64_t{1560935018} * 1000000 + 500000);
  EXPECT_EQ(to_unix_micros(*parse_rfc3339("2019-06-19T09:03:38.123456789Z")), int64_t{1560935018} * 1000000 + 123456);
}

TEST(TimeFormat, RejectsMalformed) {
  for (const char* bad : {"", "2019-06-19", "2019-06-19T09:03:38", "2019-13-19T09:03:38Z", "2019-06-19T09:03:38Zjunk",
                          "2019-06-19 09:03:38Z", "2019-06-19T09:03:38.Z",
                          // Outside what SystemTime holds: converting them overflowed (found by the
                          // store_metadata fuzz target, as a backup name).
                          "0019-05-07T18:28:01Z", "9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z"}) {
    EXPECT_FALSE(parse_rfc3339(bad).has_value()) << bad;
  }
}

TEST(Duration, GoStyleWithDaysAndYears) {
  EXPECT_EQ(parse_duration("1h30m")->count(), 5400000);
  EXPECT_EQ(parse_duration("500ms")->count(), 500);
  EXPECT_EQ(parse_duration("2d")->count(), 2 * 86400000LL);
  EXPECT_EQ(parse_duration("1y")->count(), 365 * 86400000LL);
  EXPECT_EQ(parse_duration("1.5s")->count(), 1500);
  EXPECT_FALSE(parse_duration("5").has_value());
  EXPECT_FALSE(parse_duration("5 s").has_value());
  EXPECT_FALSE(parse_duration("abc").has_value());
  EXPECT_EQ(format_duration_short(std::chrono::seconds(3725)), "1h02m");
  EXPECT_EQ(format_duration_short(std::chrono::seconds(59)), "59s");
}

TEST(HttpDate, FormatsAndParsesImfFixdateOnly) {
  SystemTime t = from_unix_micros(int64_t{1795584600} * 1000000);
  EXPECT_EQ(format_http_date(t), "Wed, 25 Nov 2026 05:30:00 GMT");
  EXPECT_EQ(parse_http_date("Wed, 25 Nov 2026 05:30:00 GMT"), t);
  EXPECT_FALSE(parse_http_date("Wed, 25 Nov 2026 05:30:00 UTC"));
  EXPECT_FALSE(parse_http_date("Wednesday, 25-Nov-26 05:30:00 GMT"));
  EXPECT_FALSE(parse_http_date("Wed, 25 Foo 2026 05:30:00 GMT"));
  EXPECT_FALSE(parse_http_date("Wed, 25 Nov 2026 25:30:00 GMT"));
}

}  // namespace etcdadm

// Tests of restore/pitr.{h,cc}: the point in time a restore replays the change log to
// (--to-revision, --to-time).
#include "restore/pitr.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "common/error.h"
#include "common/timefmt.h"

namespace etcdadm {
namespace {

TEST(PointInTimeTarget, RevisionEndAndTimeParseAndBadOnesAreRefused) {
  SystemTime now = *parse_rfc3339("2026-11-25T02:00:00Z");
  PointInTime none = point_in_time_from_flags("", "", now);
  EXPECT_FALSE(none.given());
  PointInTime rev = point_in_time_from_flags("1234", "", now);
  EXPECT_EQ(rev.revision, 1234);
  EXPECT_EQ(rev.describe(), "revision 1234");
  PointInTime end = point_in_time_from_flags("end", "", now);
  EXPECT_TRUE(end.given());
  EXPECT_TRUE(end.log_end);
  EXPECT_EQ(end.describe(), "the end of the change log");
  PointInTime ago = point_in_time_from_flags("", "-10m", now);
  ASSERT_TRUE(ago.time);
  EXPECT_EQ(format_rfc3339_micros(*ago.time), "2026-11-25T01:50:00.000000Z");
  PointInTime at = point_in_time_from_flags("", "2026-11-25T03:30:00+02:00", now);
  EXPECT_EQ(format_rfc3339_micros(*at.time), "2026-11-25T01:30:00.000000Z");
  for (auto [r, t] : std::vector<std::pair<std::string, std::string>>{
           {"12x", ""}, {"0", ""}, {"-5", ""}, {"last", ""}, {"", "yesterday"}, {"", "-0s"}, {"5", "-1m"}}) {
    EXPECT_THROW(point_in_time_from_flags(r, t, now), Error) << r << " / " << t;
  }
}

}  // namespace
}  // namespace etcdadm

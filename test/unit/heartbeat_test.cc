// Tests of changelog/heartbeat.{h,cc}: the heartbeat written beside the segments, and where a live
// capture stands.
#include "changelog/heartbeat.h"

#include <gtest/gtest.h>

#include "changelog/segment.h"
#include "common/fs.h"
#include "store/backend/local/local_store.h"
#include "test/support/changelog_records.h"
#include "test/support/test_env.h"

namespace etcdadm::changelog {
namespace {

using test::write_segment;

TEST(ChangeLogHeartbeat, WrittenBesideTheSegmentsAndProvesOnlyWhatTheChainHolds) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  EXPECT_FALSE(read_heartbeat(store, "c1"));
  write_heartbeat(store, "c1", Heartbeat{250, 1795000000123456});
  write_heartbeat(store, "c1", Heartbeat{300, 1795000009000000});  // overwritten in place
  bool listed = false;
  EXPECT_TRUE(list_segments(store, "c1", &listed).empty());
  EXPECT_TRUE(listed);
  auto hb = read_heartbeat(store, "c1");
  ASSERT_TRUE(hb);
  EXPECT_EQ(hb->revision, 300);
  EXPECT_EQ(hb->checked_at_micros, 1795000009000000);
  EXPECT_NE(read_file(dir / "store/changelog/c1/heartbeat.json").find("\"checkedAt\":\"2026-11-18T"), std::string::npos);

  LogChain chain;  // a snapshot at 200, segments to 300, the last received at ms 1795000005000
  chain.from_revision = 200;
  chain.reaches = 300;
  chain.reaches_observed_ms = 1795000005000;
  EXPECT_EQ(complete_until_micros(chain, std::nullopt), 1795000005000000);
  EXPECT_EQ(complete_until_micros(chain, hb), 1795000009000000);            // quiet since revision 300
  EXPECT_EQ(complete_until_micros(chain, Heartbeat{301, 1795000009000000}),  // 301 is not in the chain
            1795000005000000);
  EXPECT_EQ(complete_until_micros(chain, Heartbeat{150, 1795000009000000}),  // before the snapshot
            1795000005000000);
  LogChain bare;  // a snapshot at 300 and a quiet cluster since
  bare.from_revision = bare.reaches = 300;
  EXPECT_EQ(complete_until_micros(bare, hb), 1795000009000000);

  // A damaged heartbeat only stops proving: it is ignored, never an error.
  write_file_atomic(dir / "store/changelog/c1/heartbeat.json", "{not json", 0600, /*overwrite=*/true);
  EXPECT_FALSE(read_heartbeat(store, "c1"));
}

// Where a running capture stands (what a NOSPACE recovery's compaction must not pass): the newest
// segment or heartbeat received within the window; nothing for a store not written yet, or a log
// whose capture stopped long ago.
TEST(ChangeLogHeartbeat, ALiveCaptureStandsAtTheNewestRecentSegmentOrHeartbeat) {
  test::TempDir dir;
  LocalStore missing(dir / "nowhere");
  EXPECT_EQ(live_capture_revision(missing, "cdf818194e3a8c32", 1795000000300000, std::chrono::minutes(15)), 0);
  LocalStore store(dir / "store");
  write_segment(store, 100, 200);  // its last revision received at 1795000000200 ms
  const int64_t now = 1795000000200000 + 60000000;  // a minute later
  EXPECT_EQ(live_capture_revision(store, "cdf818194e3a8c32", now, std::chrono::minutes(15)), 200);
  EXPECT_EQ(live_capture_revision(store, "cdf818194e3a8c32", now, std::chrono::seconds(30)), 0) << "stopped";
  write_heartbeat(store, "cdf818194e3a8c32", Heartbeat{250, now - 1000000});
  EXPECT_EQ(live_capture_revision(store, "cdf818194e3a8c32", now, std::chrono::seconds(30)), 250);
}

}  // namespace
}  // namespace etcdadm::changelog

// Tests of restore/segment_read_ahead.{h,cc}: segments read by workers ahead of the replay, their
// records handed over in chain order.
#include "restore/segment_read_ahead.h"

#include <gtest/gtest.h>

#include "changelog/segment.h"
#include "common/fs.h"
#include "store/backend/local/local_store.h"
#include "test/support/changelog_records.h"
#include "test/support/error_of.h"
#include "test/support/test_env.h"

namespace etcdadm::changelog {
namespace {

using test::message_of;
using test::write_segment;

TEST(ChangeLogReadAhead, RecordsComeInChainOrderWhateverTheWorkersFinishFirst) {
  test::TempDir dir;
  LocalStore store(dir.path());
  std::vector<SegmentName> chain;
  for (int64_t first = 1; first <= 400; first += 40) chain.push_back(write_segment(store, first, first + 39, Compression::kZstd));
  // Bounds of one record per segment (every record is larger) and of plenty.
  for (uint64_t bytes : {uint64_t{1}, uint64_t{1} << 20}) {
    for (size_t threads : {1, 3, 8}) {
      SegmentReadAhead ahead(BackupStore(store), chain, chain, threads, threads + 1, bytes);
      int64_t expect = 1;
      while (auto r = ahead.next()) {
        ASSERT_EQ(r->revision, expect++) << threads << " workers, " << bytes << " bytes";
        EXPECT_TRUE(r->defect.empty());
      }
      EXPECT_EQ(expect, 401) << threads << " workers";
      EXPECT_EQ(ahead.segments_begun(), chain.size());
      EXPECT_FALSE(ahead.next());
    }
  }
}

TEST(ChangeLogReadAhead, ADamagedSegmentFailsOnlyWhenItsTurnComes) {
  test::TempDir dir;
  LocalStore store(dir.path());
  std::vector<SegmentName> chain;
  for (int64_t first = 1; first <= 100; first += 20) chain.push_back(write_segment(store, first, first + 19));
  std::string path = dir / chain[3].key();
  std::string bytes = read_file(path);
  bytes[bytes.size() / 2] ^= 0x01;
  write_file_atomic(path, bytes, 0600);
  {
    SegmentReadAhead ahead(BackupStore(store), chain, chain, 4, 8, 1 << 20);
    for (int64_t rev = 1; rev <= 60; ++rev) {
      auto r = ahead.next();
      ASSERT_TRUE(r) << "revision " << rev << " is in a whole segment";
      EXPECT_EQ(r->revision, rev);
    }
    std::string m = message_of([&] { ahead.next(); });
    EXPECT_NE(m.find(chain[3].key()), std::string::npos) << m;
    EXPECT_NE(m.find("SHA-256"), std::string::npos) << m;
    EXPECT_EQ(ahead.segments_begun(), 4u);
  }
  {
    // A reader that stops before the damaged one (a target reached) hears nothing of it, and the
    // workers, some of them waiting for room, are stopped when it goes.
    SegmentReadAhead ahead(BackupStore(store), chain, chain, 4, 8, 1);
    EXPECT_TRUE(ahead.next());
  }
}

}  // namespace
}  // namespace etcdadm::changelog

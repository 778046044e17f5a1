// Tests of etcdadm/maintenance/space.{h,cc}: the revision a NOSPACE recovery compacts to.
#include "etcdadm/maintenance/space.h"

#include <gtest/gtest.h>

#include <string>

namespace etcdadm {
namespace {

TEST(SpaceRecovery, CompactionRevisionKeepsTheMarginAndTheChangeLog) {
  std::string note;
  EXPECT_EQ(space_compaction_revision(50000, 1000, 0, &note), 49000);
  EXPECT_EQ(note, "revision 50000 minus a margin of 1000 revisions");
  EXPECT_EQ(space_compaction_revision(50000, 1000, 42000, &note), 42000);
  EXPECT_EQ(note, "revision 42000, where the change log's capture is (the margin would be 49000)");
  EXPECT_EQ(space_compaction_revision(50000, 1000, 49990, &note), 49000) << "a capture at the head keeps the margin";
  EXPECT_EQ(space_compaction_revision(900, 1000, 0, &note), 0);
  EXPECT_EQ(note, "no compaction: the cluster is at revision 900, within the margin");
}

}  // namespace
}  // namespace etcdadm

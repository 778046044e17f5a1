// When `upgrade apply` takes a raft snapshot on the member's current binary before switching it
// (etcd 3.7 cannot replay the v2 requests older releases left in a member's log): known answers.
#include <gtest/gtest.h>

#include "etcdadm/upgrade/upgrade.h"

namespace etcdadm {
namespace {

TEST(UpgradeRules, ARaftSnapshotIsDueOnlyWhenAMemberLeavesAReleaseBelow37For37OrLater) {
  EXPECT_TRUE(raft_snapshot_due_before_switch("3.6.16", "3.7.3"));
  EXPECT_TRUE(raft_snapshot_due_before_switch("3.6.0", "3.7.0"));
  EXPECT_TRUE(raft_snapshot_due_before_switch("v3.6.16", "v3.8.0")) << "any later minor reads the log the same way";
  EXPECT_TRUE(raft_snapshot_due_before_switch("3.5.35", "3.7.3")) << "refused elsewhere as two minors, but due";
  EXPECT_FALSE(raft_snapshot_due_before_switch("3.7.2", "3.7.3")) << "a patch within 3.7";
  EXPECT_FALSE(raft_snapshot_due_before_switch("3.7.3", "3.6.16")) << "a downgrade goes through etcd's API";
  EXPECT_FALSE(raft_snapshot_due_before_switch("3.5.35", "3.6.16"));
  EXPECT_FALSE(raft_snapshot_due_before_switch("3.4.23", "3.5.35"));
  EXPECT_FALSE(raft_snapshot_due_before_switch("", "3.7.3")) << "no version known: nothing to decide";
  EXPECT_FALSE(raft_snapshot_due_before_switch("3.6.16", "latest"));
}

}  // namespace
}  // namespace etcdadm

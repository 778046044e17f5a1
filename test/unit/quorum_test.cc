// quorum.h: which members may be stopped or removed, as known answers for clusters of 1-5 voters
// with members down, learners and alarms.
#include <gtest/gtest.h>

#include "common/error.h"
#include "etcdadm/quorum.h"

namespace etcdadm {
namespace {

// "hhd" -> three voters, the third down; "l" a learner (healthy), "a" a voter listing an alarm
// (etcd lists the cluster's alarms on every member), "n" a voter that sees no leader.
ClusterInfo cluster(const std::string& shape) {
  ClusterInfo info;
  for (size_t i = 0; i < shape.size(); ++i) {
    MemberInfo m;
    m.id = 0x10 + i;
    m.name = "m" + std::to_string(i + 1);
    m.learner = shape[i] == 'l';
    m.reachable = shape[i] != 'd';
    if (shape[i] == 'a') m.errors.push_back("memberID:17 alarm:NOSPACE ");
    if (shape[i] == 'n') m.errors.push_back("etcdserver: no leader");
    info.members.push_back(m);
  }
  return info;
}

TEST(Quorum, StoppingAMemberNeedsTheOthersToBeAQuorumOfAllVoters) {
  EXPECT_TRUE(check_stop(cluster("hhh"), 0x10).safe);
  EXPECT_FALSE(check_stop(cluster("hhd"), 0x10).safe);   // 1 of 3 left
  EXPECT_TRUE(check_stop(cluster("hhd"), 0x12).safe);    // the down one itself: 2 of 3 stay
  EXPECT_FALSE(check_stop(cluster("h"), 0x10).safe);     // a one-member cluster goes down
  EXPECT_FALSE(check_stop(cluster("hh"), 0x10).safe);    // 1 of 2 is no quorum
  EXPECT_TRUE(check_stop(cluster("hhhhh"), 0x10).safe);
  EXPECT_TRUE(check_stop(cluster("hhhhd"), 0x10).safe);  // 3 of 5
  EXPECT_FALSE(check_stop(cluster("hhhdd"), 0x10).safe); // 2 of 5
  EXPECT_TRUE(check_stop(cluster("aaa"), 0x10).safe);    // alarms are the cluster's, not a member's
  EXPECT_FALSE(check_stop(cluster("hhn"), 0x10).safe);   // a member without a leader cannot vote with us
  EXPECT_TRUE(check_stop(cluster("hhl"), 0x12).safe);    // a learner holds no vote
  EXPECT_FALSE(check_stop(cluster("hhl"), 0x10).safe);   // learners do not count for quorum
  auto q = check_stop(cluster("hhd"), 0x10);
  EXPECT_EQ(q.voters, 3);
  EXPECT_EQ(q.quorum_after, 2);
  EXPECT_EQ(q.healthy_after, 1);
  EXPECT_NE(q.explanation.find("3 voting members, 2 healthy"), std::string::npos) << q.explanation;
  EXPECT_FALSE(check_stop(cluster("hhh"), 0x99).safe);   // not a member
}

TEST(Quorum, RemovingAMemberNeedsAQuorumNowAndAmongTheVotersLeft) {
  EXPECT_TRUE(check_remove(cluster("hhd"), 0x12).safe);   // the dead one: 2 of 2 left
  EXPECT_TRUE(check_remove(cluster("hhh"), 0x12).safe);   // 2 of 2 left
  EXPECT_FALSE(check_remove(cluster("hdd"), 0x12).safe);  // no quorum now: nothing commits
  EXPECT_FALSE(check_remove(cluster("hhd"), 0x10).safe);  // a healthy one: 1 of 2 left
  EXPECT_FALSE(check_remove(cluster("hd"), 0x11).safe);   // 1 of 2 is no quorum now
  EXPECT_FALSE(check_remove(cluster("h"), 0x10).safe);    // the last voter
  EXPECT_TRUE(check_remove(cluster("hhhhd"), 0x14).safe);
  EXPECT_TRUE(check_remove(cluster("hhhdd"), 0x14).safe); // 3 of 5 now; 3 of 4 after (quorum 3)
  EXPECT_FALSE(check_remove(cluster("hhhdd"), 0x10).safe);// 2 of 4 after
  EXPECT_TRUE(check_remove(cluster("hhl"), 0x12).safe);   // a learner
  EXPECT_TRUE(check_remove(cluster("aad"), 0x12).safe);   // under an alarm (a corrupt member's replacement)
  EXPECT_FALSE(check_remove(cluster("nnd"), 0x12).safe);  // members without a leader: no quorum now
  auto q = check_remove(cluster("hdd"), 0x12);
  EXPECT_NE(q.explanation.find("no quorum now"), std::string::npos) << q.explanation;
  EXPECT_NE(check_remove(cluster("h"), 0x10).explanation.find("last voting member"), std::string::npos);
}

TEST(Quorum, MembersAreFoundByNameOrHexId) {
  auto info = cluster("hhh");
  EXPECT_EQ(find_member(info, "m2")->id, 0x11u);
  EXPECT_EQ(find_member(info, "12")->name, "m3");
  EXPECT_EQ(find_member(info, "nope"), nullptr);
  EXPECT_EQ(find_member(info, ""), nullptr);
  info.members[2].name = "m1";
  EXPECT_THROW(find_member(info, "m1"), Error);
}

}  // namespace
}  // namespace etcdadm

// Membership (controller/decide_membership.cc): dead members replaced after the grace and never at
// the cost of quorum, growing and shrinking one change at a time, added hosts joining and removed
// hosts forgetting their member.
#include <gtest/gtest.h>

#include "controller/decide.h"
#include "test/support/controller_observations.h"

namespace etcdadm {
namespace {

using namespace decide_test;

TEST(ControllerDecide, TheLeadersControllerReplacesADeadMemberAfterTheGraceAndNeverAtTheCostOfQuorum) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3", false)});
  o.auto_spec.replace_after_seconds = 60;
  o.unhealthy_seconds[3] = 59;
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("unhealthy: h3 (3) for 59 s; a member is replaced after 60 s"), std::string::npos) << d.reason;
  o.unhealthy_seconds[3] = 60;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 3u);
  EXPECT_EQ(d.command, "etcdadm member remove h3 --endpoints https://10.0.0.1:2379");
  // Two of three dead: the cluster has no quorum to spare (it would not answer either, but the
  // rule holds on its own).
  o = acting({member(1, "h1"), member(2, "h2", false), member(3, "h3", false)});
  o.unhealthy_seconds = {{2, 600}, {3, 600}};
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("would cost quorum"), std::string::npos) << d.reason;
  // Not beside the leader: never acts.
  o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3", false)});
  o.unhealthy_seconds[3] = 600;
  o.cluster.info.leader_id = 2;
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);
}

// Found in review: a member whose client port the leader cannot reach was removed, added, removed
// again forever, each time with a backup and a full resync. A host replaced within the hour is
// replaced again only after four times the grace, and the wait says so.
TEST(ControllerDecide, AHostReplacedLatelyIsReplacedAgainOnlyAfterALongerGrace) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3", false)});
  o.auto_spec.replace_after_seconds = 60;
  o.unhealthy_seconds[3] = 60;
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.replaced_peer_url, "https://10.0.0.3:2380");
  o.replaced_seconds_ago["https://10.0.0.3:2380"] = 300;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("h3 (3) for 60 s (its host's member was replaced 300 s ago: replaced again after 240 s)"),
            std::string::npos)
      << d.reason;
  o.unhealthy_seconds[3] = 240;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_NE(d.reason.find("replaced after 240 s, 4 times the spec's: its host's member was replaced 300 s ago"),
            std::string::npos)
      << d.reason;
  // One too many: removed at once whatever its past, and that is no replacement.
  o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3", false), member(4, "h4")});
  o.replaced_seconds_ago["https://10.0.0.3:2380"] = 300;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.replaced_peer_url, "");
}

TEST(ControllerDecide, GrowsWithALiveSpareLearnerFirstThenPromotesAndShrinksTheHighestNamesMovingAVictimsLeadershipFirst) {
  Observation o = acting({member(1, "h1"), member(2, "h2")}, 4);
  o.hosts[2].record.data = DataState::kEmpty;  // h3: a spare
  o.hosts[3].record.data = DataState::kEmpty;  // h4: a spare, not live
  o.hosts[3].live = false;
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kAddMember) << d.reason;
  EXPECT_EQ(d.host.name, "h3");
  EXPECT_EQ(d.command, "etcdadm join https://10.0.0.1:2379 --name h3 (on h3)");
  // Added, not started: wait for its host. Started: promote.
  o.cluster = cluster_of({member(1, "h1"), member(2, "h2"), member(3, "", true, true)}, 1);
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  o.cluster = cluster_of({member(1, "h1"), member(2, "h2"), member(3, "h3", true, true)}, 1);
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kPromoteMember);
  EXPECT_EQ(d.member_id, 3u);
  // No spare: say so.
  o = acting({member(1, "h1"), member(2, "h2")}, 2);
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("no live spare host"), std::string::npos) << d.reason;
  // Five members, spec three: the highest names go, one at a time, the leader too: its leadership
  // first goes to the voter furthest along among those that stay (h4 goes next, so never h4).
  o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3"), member(4, "h4"), member(5, "h5")}, 5);
  o.cluster.info.leader_id = 5;
  o.local.member_id = 5;
  o.self = "h5";
  o.self_peer_url = "https://10.0.0.5:2380";
  for (auto& m : o.cluster.info.members) m.raft_index = 100 + m.id;  // h4 the furthest along of the others
  o.cluster.info.members[1].raft_index = 103;                         // h2 ties h3's 103: the first found
  o.spec->member_count = 3;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 5u);
  EXPECT_EQ(d.leadership_to, 2u) << d.reason;
  EXPECT_NE(d.reason.find("removing h5 (5) (the leader: its leadership moves to h2 (2) first)"), std::string::npos)
      << d.reason;
  EXPECT_EQ(d.command, "etcdctl move-leader 2 && etcdadm reset (on h5)");
  // Not the leader: no transfer (h1 leads and acts).
  o.cluster.info.leader_id = 1;
  o.local.member_id = 1;
  o.self = "h1";
  o.self_peer_url = "https://10.0.0.1:2380";
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 5u);
  EXPECT_EQ(d.leadership_to, 0u);
  EXPECT_EQ(d.command, "etcdadm reset (on h5)");
  // Four left, h4 leads: it goes next, its leadership to h3 (the furthest along of h1-h3).
  o.cluster.info.members.pop_back();
  o.cluster.info.leader_id = 4;
  o.local.member_id = 4;
  o.self = "h4";
  o.self_peer_url = "https://10.0.0.4:2380";
  o.cluster.info.members[1].raft_index = 102;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 4u);
  EXPECT_EQ(d.leadership_to, 3u);
  // An unhealthy one goes first, at once, when there are too many.
  o.cluster.info.members[1].reachable = false;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 2u);
}

// Found in review: a learner whose host never starts it (one forged spare record was enough) held
// back every rule for good. Now it is removed after the grace, and meanwhile the rules that keep
// the cluster alive still run.
TEST(ControllerDecide, ALearnerThatNeverStartsOrCatchesUpIsRemovedAfterTheGraceAndHoldsBackNoRepair) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "", true, true)}, 3);
  o.learner_seconds[3] = 10;
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("waiting for its host to start it (removed after 600 s)"), std::string::npos) << d.reason;
  o.learner_seconds[3] = 600;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 3u);
  EXPECT_NE(d.reason.find("its host never started it; removing it (a learner has no vote"), std::string::npos) << d.reason;
  EXPECT_EQ(d.command, "etcdctl member remove 3");
  // Started, but never promoted (etcd refused: not caught up): the same after the grace.
  o.cluster = cluster_of({member(1, "h1"), member(2, "h2"), member(3, "h3", true, true)}, 1);
  EXPECT_EQ(decide(o, "t").step, Step::kRemoveMember);
  o.learner_seconds[3] = 10;
  EXPECT_EQ(decide(o, "t").step, Step::kPromoteMember);
  // A learner waiting for its host does not hold back an unhealthy voter's replacement.
  o = acting({member(1, "h1"), member(2, "h2", false), member(4, "h4"), member(3, "", true, true)}, 4);
  o.learner_seconds[3] = 10;
  o.unhealthy_seconds[2] = 700;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 2u);
}

// Found in review: a member whose client port the leader could not reach while its peer port
// worked was removed, added, removed for ever. Its own live host's word keeps it.
TEST(ControllerDecide, AMemberItsOwnHostSeesHealthyIsNotReplacedOnTheLeadersViewAlone) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3", false)});
  o.unhealthy_seconds[3] = 700;
  o.hosts[2].record.member_id = 3;
  o.hosts[2].record.etcd_running = true;
  o.hosts[2].record.has_leader = true;
  o.rewritten_since_unhealthy = {3};  // written since the member stopped answering here
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("its host h3 reports it running with a leader: a partial partition"), std::string::npos)
      << d.reason;
  o.hosts[2].live = false;  // its host silent: the leader's view is all there is
  EXPECT_EQ(decide(o, "t").step, Step::kRemoveMember);
  o.hosts[2].live = true;
  // Its last record is not newer than the one the store held once the trouble began, however
  // lately this controller read it: a dead host's (CI at 014a441: a host stopped a moment after its
  // member, its last record read a round later, was taken for a partial partition for ever).
  o.rewritten_since_unhealthy.clear();
  EXPECT_EQ(decide(o, "t").step, Step::kRemoveMember);
  o.rewritten_since_unhealthy = {3};
  o.hosts[2].record.has_leader = false;  // its host sees no leader either: cut off
  EXPECT_EQ(decide(o, "t").step, Step::kRemoveMember);
}

TEST(ControllerDecide, AnAddedHostJoinsAndARemovedHostForgetsItsMember) {
  Observation o = fresh(3);
  o.created_marker = true;
  o.hosts[1].record.data = DataState::kMember;
  o.cluster = cluster_of({member(1, "", true, true), member(2, "h2"), member(3, "h3")}, 2);
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kJoinAsAdded) << d.reason;
  EXPECT_EQ(d.join_endpoint, "https://10.0.0.2:2379");
  EXPECT_EQ(d.member_id, 1u) << "the learner this host becomes, recorded before it starts";
  // Removed: its cluster answers without it.
  o.cluster = cluster_of({member(2, "h2"), member(3, "h3")}, 2);
  o.local = LocalView{DataState::kMember, "x", false, false, 1, 77};
  EXPECT_EQ(decide(o, "t").step, Step::kForgetMember);
  // Another cluster's word does not count.
  o.cluster.info.cluster_id = 78;
  EXPECT_EQ(decide(o, "t").step, Step::kStartLocalMember);
  // Lost data, member removed: a spare again.
  o.cluster.info.cluster_id = 77;
  o.local.data = DataState::kLost;
  EXPECT_EQ(decide(o, "t").step, Step::kForgetMember);
  // Lost data, member still listed: wait to be removed.
  o.cluster = cluster_of({member(1, "h1", false), member(2, "h2"), member(3, "h3")}, 2);
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
}

// Found in review: before etcd 3.6 a member answers MemberList from its own state, so one lagging
// answer could make a healthy member's host set its data aside. A removal counts once seen a while.
TEST(ControllerDecide, ARemovalCountsOnlyOnceSeenForAWhile) {
  Observation o = acting({member(2, "h2"), member(3, "h3")});
  o.local.member_id = 1;
  o.removal_seen_seconds = 0;
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("missing from its cluster's member list: confirmed once seen for 3 s"), std::string::npos)
      << d.reason;
  o.removal_seen_seconds = kRemovalConfirmSeconds;
  EXPECT_EQ(decide(o, "t").step, Step::kForgetMember);
}

TEST(ControllerDecide, TheHostOfARemovedMemberSetsItsDataAsideAsCorruptOrRemoved) {
  Observation o = acting({member(2, "h2"), member(3, "h3")});
  o.local.member_id = 1;  // this host's member, no longer listed
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kForgetMember) << d.reason;
  EXPECT_EQ(d.set_aside, SetAside::kRemoved) << "removed for another reason: the newest such data kept";
  o.maintenance.corrupt[1] = CorruptMember{o.now_unix, "h2", 900, 6, 5};
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kForgetMember);
  EXPECT_EQ(d.set_aside, SetAside::kCorrupt);
  EXPECT_NE(d.reason.find("found corrupt by h2 (its HashKV at revision 900 was 6, the majority's 5)"), std::string::npos) << d.reason;

  // Removed and at once added again as a new learner at the same peer URL (both by the acting
  // controller between two of this host's rounds): the data is still the removed member's, which
  // etcd will not start as the new one (CI, etcd3.7/Auto.ControllersKilledAtEachStep...: started
  // again and again). The new learner's ID tells them apart.
  Observation readded = acting({member(2, "h2"), member(3, "h3"), member(1, "", false, true)});
  readded.cluster.info.members.back().id = 9;
  readded.local.member_id = 1;
  readded.local.etcd_running = false;
  d = decide(readded, "t");
  ASSERT_EQ(d.step, Step::kForgetMember) << d.reason;
  EXPECT_EQ(d.set_aside, SetAside::kRemoved);
  // The same learner as this host's own member (its ID recorded at the join): started, not forgotten.
  readded.cluster.info.members.back().id = 1;
  EXPECT_EQ(decide(readded, "t").step, Step::kStartLocalMember);
  // A member ID never seen (0): the peer URL alone decides, as before.
  readded.cluster.info.members.back().id = 9;
  readded.local.member_id = 0;
  EXPECT_NE(decide(readded, "t").step, Step::kForgetMember);
}

}  // namespace
}  // namespace etcdadm

// etcd versions (controller/decide_versions.cc): one turn at a time, followers first and the
// leader last, refusals reported with nothing stopped, a change stopped part way finished.
#include <gtest/gtest.h>

#include <algorithm>
#include "controller/decide.h"
#include "etcd/etcd_version.h"
#include "test/support/controller_observations.h"

namespace etcdadm {
namespace {

using namespace decide_test;

// plan_upgrade's answer for the cluster `o` observes, the spec's version the target: the members
// done first, the followers by name, the leader last (as plan_upgrade orders them).
UpgradePlan version_plan_for(const Observation& o, VersionStepKind kind = VersionStepKind::kUpgrade) {
  UpgradePlan p;
  p.target = *EtcdVersion::parse(o.spec->etcd_version);
  for (const auto& m : o.cluster.info.members) {
    UpgradePlanEntry e;
    e.member = m;
    e.version = EtcdVersion::parse(m.version);
    e.step.kind = e.version == p.target ? VersionStepKind::kSame : kind;
    p.members.push_back(e);
  }
  auto rank = [](const UpgradePlanEntry& e) { return e.step.kind == VersionStepKind::kSame ? 0 : e.member.leader ? 2 : 1; };
  std::stable_sort(p.members.begin(), p.members.end(), [&](const auto& a, const auto& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a.member.name < b.member.name;
  });
  return p;
}

void set_member_ids(Observation& o) {
  for (auto& h : o.hosts) h.record.member_id = static_cast<uint64_t>(h.record.name.back() - '0');
}

TEST(ControllerDecide, AVersionChangeGivesOneTurnAtATimeFollowersFirstTheLeaderLast) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  set_member_ids(o);
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kIdle);
  EXPECT_TRUE(d.settled) << "as the spec says: the store is read every idle interval";
  o.spec->etcd_version = "3.6.11";
  o.version_plan = version_plan_for(o);
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kGiveVersionTurn) << d.reason;
  EXPECT_EQ(d.turn, (VersionTurn{1, "h2", 2, "3.5.17", "3.6.11", "h1", o.now_unix}));
  EXPECT_NE(d.reason.find("followers first"), std::string::npos) << d.reason;
  EXPECT_EQ(d.command, "etcdadm upgrade apply --version 3.6.11 --store s3://b/c (on h2)");
  EXPECT_FALSE(d.settled);
  // The turn given: nothing more until its member runs 3.6.11 and is healthy.
  o.version_turn = d.turn;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kIdle);
  EXPECT_NE(d.reason.find("version change: turn 1"), std::string::npos) << d.reason;
  EXPECT_FALSE(d.settled);
  o.cluster.info.members[1].version = "3.6.11";
  o.cluster.info.members[1].reachable = false;  // restarted, not answering yet
  o.unhealthy_seconds[2] = 5;
  EXPECT_NE(decide(o, "t").reason.find("unhealthy"), std::string::npos) << "an unhealthy member comes first";
  o.cluster.info.members[1].reachable = true;
  o.unhealthy_seconds.clear();
  o.version_plan = version_plan_for(o);
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kGiveVersionTurn) << d.reason;
  EXPECT_EQ(d.turn.sequence, 2u);
  EXPECT_EQ(d.turn.host, "h3");
  // The followers done, the leader's host last: this controller gives the turn to itself.
  o.version_turn = d.turn;
  o.cluster.info.members[2].version = "3.6.11";
  o.version_plan = version_plan_for(o);
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kGiveVersionTurn) << d.reason;
  EXPECT_EQ(d.turn.host, "h1");
  EXPECT_EQ(d.turn.sequence, 3u);
  EXPECT_NE(d.reason.find("the leader's, last"), std::string::npos) << d.reason;
  // Its own turn comes before anything else it would do.
  o.version_turn = d.turn;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kChangeVersion) << d.reason;
  EXPECT_EQ(d.turn.to, "3.6.11");
  EXPECT_EQ(d.command, "etcdadm upgrade apply --version 3.6.11 --store s3://b/c");
  // Every member on the spec's version: settled again.
  o.cluster.info.members[0].version = "3.6.11";
  o.version_plan.reset();
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kIdle) << d.reason;
  EXPECT_TRUE(d.settled);
  // A turn whose member was replaced meanwhile is void: the next member gets one.
  o.cluster.info.members[0].version = "3.5.17";
  o.cluster.info.members[1].version = "3.5.17";
  o.version_turn = VersionTurn{4, "h9", 9, "3.5.17", "3.6.11", "h1", 0};
  o.version_plan = version_plan_for(o);
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kGiveVersionTurn) << d.reason;
  EXPECT_EQ(d.turn.host, "h2");
  EXPECT_EQ(d.turn.sequence, 5u);
  // A member no registered host runs: said, left to a person.
  o.hosts[1].record.data = DataState::kEmpty;
  o.hosts[1].record.member_id = 0;
  o.hosts[1].record.peer_url = "https://10.0.0.8:2380";
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("no registered host runs it"), std::string::npos) << d.reason;
}

TEST(ControllerDecide, AVersionStepEtcdRefusesIsReportedAndStopsNothing) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  set_member_ids(o);
  o.spec->etcd_version = "3.7.3";
  o.version_plan = version_plan_for(o);
  o.version_plan->allowed = false;
  o.version_plan->problems = {"h2: 3.5 -> 3.7 skips a minor"};
  o.version_plan->members[0].step = VersionStep{VersionStepKind::kUpgrade, false, "skips a minor", "go to 3.6 first"};
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("etcd does not allow from here: h2: 3.5 -> 3.7 skips a minor; nothing was stopped"), std::string::npos) << d.reason;
  EXPECT_EQ(d.command, "go to 3.6 first; or put the spec back: etcdadm seed --store s3://b/c --version <the version the members run>");
  // Not surveyed (the survey failed this round): wait, never a turn blind.
  o.version_plan.reset();
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
}

TEST(ControllerDecide, TheTurnsHostChangesItsMemberAndFinishesAChangeStoppedPartWay) {
  Observation o = fresh(3);
  o.created_marker = true;
  for (auto& h : o.hosts) h.record.data = DataState::kMember;
  set_member_ids(o);
  o.local = LocalView{DataState::kMember, "x", true, true, 1, 77};
  o.cluster = cluster_of({member(1, "h1"), member(2, "h2"), member(3, "h3")}, 2);
  o.spec->etcd_version = "3.6.11";
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kIdle);
  EXPECT_FALSE(d.settled) << "a member not on the spec's version reads the store every round: its turn may come";
  o.version_turn = VersionTurn{2, "h1", 1, "3.5.17", "3.6.11", "h2", 0};
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kChangeVersion) << d.reason;
  EXPECT_EQ(d.turn.sequence, 2u);
  // Done: nothing more.
  o.cluster.info.members[0].version = "3.6.11";
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);
  // Killed part way, etcd down: the change is finished (not etcd started on whatever is in place).
  o.cluster.info.members[0].version = "";
  o.cluster.info.members[0].reachable = false;
  o.local.etcd_running = false;
  o.local.version_change = InterruptedChange{"3.5.17", "3.6.11", false};
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kChangeVersion) << d.reason;
  EXPECT_NE(d.reason.find("stopped part way: finishing it"), std::string::npos) << d.reason;
  // A change no turn covers (a person's, or a turn for another version): left to a person.
  o.version_turn->to = "3.6.12";
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_EQ(d.command, "etcdadm upgrade apply --version 3.6.11 (or etcdadm upgrade rollback)");
  // Killed after its switch (the member runs 3.6.11): the turn moved on meanwhile, and what is left
  // restarts nothing, so it is finished.
  o.version_turn = VersionTurn{3, "h2", 2, "3.5.17", "3.6.11", "h2", 0};
  o.cluster.info.members[0].version = "3.6.11";
  o.cluster.info.members[0].reachable = true;
  o.local.etcd_running = true;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kChangeVersion) << d.reason;
  EXPECT_EQ(d.turn.to, "3.6.11");
  EXPECT_NE(d.reason.find("finishing its checks (no restart)"), std::string::npos) << d.reason;
  o.local.version_change->rollback = true;  // a rollback is a person's to finish
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  // A turn for this host's name but another member (it was replaced since): not this member's.
  o.local.version_change.reset();
  o.local.etcd_running = true;
  o.cluster.info.members[0].version = "3.5.17";
  o.cluster.info.members[0].reachable = true;
  o.version_turn = VersionTurn{2, "h1", 9, "3.5.17", "3.6.11", "h2", 0};
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);
  // A turn of an earlier change (to another version than the spec's) written back: no change.
  o.version_turn = VersionTurn{1, "h1", 1, "3.4.23", "3.5.17", "h2", 0};
  o.cluster.info.members[0].version = "3.6.11";
  o.cluster.info.members[1].version = "3.5.17";
  EXPECT_EQ(decide(o, "t").step, Step::kIdle) << decide(o, "t").reason;
  o.version_turn->to = "3.6.11";
  o.cluster.info.members[0].version = "3.5.17";
  EXPECT_EQ(decide(o, "t").step, Step::kChangeVersion);
}

}  // namespace
}  // namespace etcdadm

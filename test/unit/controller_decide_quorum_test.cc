// A lost quorum (rule L, controller/decide_quorum.cc): a cluster that answers without a leader is
// seen as a lost quorum after several elections, never as "the leader's controller acts", and is
// reported as lost for good after the spec's replaceAfter, with the survivors' revisions, the
// change log's end and the `etcdadm recover` a person runs. No controller recovers it by itself.
#include <gtest/gtest.h>

#include "controller/decide.h"
#include "test/support/controller_observations.h"

namespace etcdadm {
namespace {

using namespace decide_test;

// Two of three members gone, the survivor h1 answering without a leader (etcd answers Status
// without one), as seen from h1's own controller.
Observation leaderless() {
  Observation o = acting({member(1, "h1"), member(2, "h2", false), member(3, "h3", false)});
  o.cluster.info.leader_id = 0;
  for (auto& m : o.cluster.info.members) m.leader = false;
  o.cluster.info.members[0].revision = 1234;
  o.local.has_leader = false;
  o.auto_spec.replace_after_seconds = 600;
  o.store_url = "s3://b/etcd";
  return o;
}

TEST(ControllerDecideQuorum, ALeaderlessClusterIsALostQuorumAfterSeveralElectionsNeverTheLeadersControllerActing) {
  Observation o = leaderless();
  auto loss = quorum_loss(o);
  ASSERT_TRUE(loss);
  ASSERT_EQ(loss->survivors.size(), 1u);
  EXPECT_EQ(loss->survivors[0].member, "h1");
  EXPECT_EQ(loss->survivors[0].host, "h1");
  EXPECT_EQ(loss->survivors[0].revision, 1234);
  EXPECT_EQ(loss->unreachable, (std::vector<std::string>{"h2", "h3"}));
  // An election's seconds: idle, and it says there is no leader (the trial's record said "the
  // leader's controller acts" for minutes).
  o.quorum_lost_seconds = kQuorumLostAfterSeconds - 1;
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kIdle) << d.reason;
  EXPECT_EQ(d.reason.find("the leader's controller acts"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("no member names a leader yet"), std::string::npos) << d.reason;
  EXPECT_FALSE(d.settled) << "the store is read every round meanwhile";
  // Longer: a lost quorum, waited for.
  o.quorum_lost_seconds = kQuorumLostAfterSeconds;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("no member names a leader for 10 s: the voters that answer are h1 (revision 1234, host "
                          "h1); those that do not: h2, h3: quorum lost, waiting for it to come back (reported as lost "
                          "for good after 600 s"),
            std::string::npos)
      << d.reason;
  EXPECT_FALSE(d.quorum_lost);
  // A spare host sees the same, not "spare host: the cluster has 3 members".
  Observation spare = o;
  spare.local = LocalView{};
  spare.self = "h4";
  d = decide(spare, "t");
  EXPECT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("quorum lost"), std::string::npos) << d.reason;
}

TEST(ControllerDecideQuorum, AQuorumLostPastReplaceAfterIsReportedWithTheSurvivorsTheLogsEndAndTheRecoverCommand) {
  Observation o = leaderless();
  // Two survivors of five, the furthest named first and chosen for the command.
  o = acting({member(1, "h1"), member(2, "h2", false), member(3, "h3", false), member(4, "h4", false),
              member(5, "h5")},
             5);
  o.cluster.info.leader_id = 0;
  for (auto& m : o.cluster.info.members) m.leader = false;
  o.cluster.info.members[0].revision = 900;
  o.cluster.info.members[4].revision = 1500;
  o.auto_spec.replace_after_seconds = 600;
  o.store_url = "s3://b/etcd";
  o.quorum_lost_seconds = 600;
  o.quorum_loss_log_end = 1498;
  const Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_TRUE(d.quorum_lost);
  EXPECT_TRUE(d.waits_on_a_person);
  EXPECT_NE(d.reason.find("quorum lost for good: no member names a leader for 600 s: the voters that answer are h5 "
                          "(revision 1500, host h5), h1 (revision 900, host h1); those that do not: h2, h3, h4; the "
                          "change log in the store reaches revision 1498"),
            std::string::npos)
      << d.reason;
  EXPECT_NE(d.reason.find("No controller recovers it by itself"), std::string::npos) << d.reason;
  EXPECT_EQ(d.command,
            "if h2, h3, h4 are gone for good: etcdadm auto pause --store s3://b/etcd, then on host h5 (the furthest "
            "along): etcdadm recover --store s3://b/etcd; on every other host whose member survived: etcdadm reset "
            "--skip-remove-member --keep-data; then etcdadm auto resume --store s3://b/etcd (the acting controller adds "
            "the hosts without a member as the spec asks)");
}

TEST(ControllerDecideQuorum, ALeaderAnywhereOrAYoungRestorePlanIsNoLostQuorum) {
  Observation o = leaderless();
  o.quorum_lost_seconds = 900;
  // A leader named by any member that answers: a quorum exists.
  o.cluster.info.leader_id = 1;
  EXPECT_FALSE(quorum_loss(o));
  // Never created (a cluster being made): no loss.
  o = leaderless();
  o.created_marker = false;
  EXPECT_FALSE(quorum_loss(o));
  // No voter answers: the no-answer wait (rule 8's), not this rule.
  o = leaderless();
  o.cluster.info.members[0].reachable = false;
  EXPECT_FALSE(quorum_loss(o));
  // The members of a restore plan written a minute ago elect as they come: no report yet.
  o = leaderless();
  o.quorum_lost_seconds = 60;
  o.now_unix = 10000;
  o.plan = plan_of({"h1", "h2", "h3"});
  o.plan->purpose = "restore";
  o.plan->sequence = 3;
  o.plan->written_unix = 9940;
  o.local.plan_sequence = 3;
  Decision d = decide(o, "t");
  EXPECT_NE(d.step, Step::kWait) << d.reason;
  EXPECT_FALSE(d.quorum_lost);
  // Unless its cluster had a leader since: a quorum lost after the restore is one.
  o.led_since_plan = true;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("quorum lost, waiting for it to come back"), std::string::npos) << d.reason;
}

// recoverQuorum on: the furthest survivor's host plans (one plan, replace-if-match) only when every
// voter that does not answer is on a live host that says it holds no data; anything that may still
// hold data and cannot be asked blocks it, named.
TEST(ControllerDecideQuorum, WithRecoverQuorumTheFurthestSurvivorPlansOnlyWhenNoLostMemberMayHoldData) {
  Observation o = leaderless();
  o.auto_spec.recover_quorum = true;
  o.quorum_lost_seconds = 600;
  o.self_peer_url = "https://10.0.0.1:2380";
  o.self_client_url = "https://10.0.0.1:2379";
  o.spec = EtcdManagerClusterSpec{3, "3.5.17"};
  o.plan = plan_of({"h1", "h2", "h3"});
  o.plan->sequence = 1;
  // h2's and h3's records still say they hold their members' data (dead hosts, their last word).
  for (auto& h : o.hosts) h.record.data = DataState::kMember;
  o.hosts[1].live = false;
  Decision d = decide(o, "tok");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_TRUE(d.quorum_lost);
  EXPECT_NE(d.reason.find("recover-quorum is on, but the controllers do not recover it while a member may still hold "
                          "data that cannot be asked: h2 (its host h2's record is not live: it may hold the member's "
                          "data behind a partition), h3 (its host h3 has not written its record since the quorum was lost"),
            std::string::npos)
      << d.reason;
  // Records that say "lost" and "empty", live, but written before the loss: no word on since (a
  // host's record may say "empty" of a member it made a moment before it died).
  o.hosts[1].live = true;
  o.hosts[1].record.data = DataState::kLost;
  o.hosts[2].record.data = DataState::kEmpty;
  d = decide(o, "tok");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("h2 (its host h2 has not written its record since the quorum was lost: it may hold the "
                          "member's data), h3 (its host h3 has not written"),
            std::string::npos)
      << d.reason;
  // Rebuilt on empty disks, their records written since: h1 plans the recovery of its own member.
  o.rewritten_since_quorum_loss = {"h2", "h3"};
  d = decide(o, "tok");
  ASSERT_EQ(d.step, Step::kPlanQuorumRecovery) << d.reason;
  EXPECT_EQ(d.plan.purpose, "recover-quorum");
  EXPECT_EQ(d.plan.sequence, 2u);
  EXPECT_EQ(d.plan.recovers_member_id, 1u);
  EXPECT_EQ(d.plan.survivor_revision, 1234);
  EXPECT_EQ(d.plan.replaces_cluster_id, 77u);
  EXPECT_EQ(d.plan.cluster_token, "tok");
  ASSERT_EQ(d.plan.members.size(), 1u);
  EXPECT_EQ(d.plan.members[0].name, "h1");
  // The plan round-trips through its record.
  const ClusterPlan back = parse_cluster_plan(cluster_plan_json(d.plan), "plan");
  EXPECT_EQ(back.recovers_member_id, 1u);
  EXPECT_EQ(back.survivor_revision, 1234);
  EXPECT_EQ(back.replaces_cluster_id, 77u);
  // Another host (a spare) waits for h1's plan; it never plans itself. (h2, its data lost, waits to
  // be replaced, as rule 4 has it.)
  Observation other = o;
  other.self = "h4";
  other.local = LocalView{};
  d = decide(other, "tok");
  EXPECT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("recover-quorum: host h1 (the furthest along) recovers it"), std::string::npos) << d.reason;
  // Off: the report only.
  o.auto_spec.recover_quorum = false;
  EXPECT_EQ(decide(o, "tok").step, Step::kWait);
}

TEST(ControllerDecideQuorum, ARecoverQuorumPlanIsCarriedOutByItsSurvivorAndTheOthersSetTheirDataAside) {
  Observation o = leaderless();
  ClusterPlan plan = plan_of({"h1"});
  plan.purpose = "recover-quorum";
  plan.sequence = 2;
  plan.recovers_member_id = 1;
  plan.survivor_revision = 1234;
  plan.replaces_cluster_id = 77;
  o.plan = plan;
  o.local.plan_sequence = 1;
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRecoverQuorum) << d.reason;
  EXPECT_EQ(d.command, "etcdadm recover --store s3://b/etcd");
  // Its member is another one now (replaced meanwhile): a person decides.
  o.local.member_id = 9;
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  // Another host with data sets it aside; one without has nothing to do here.
  Observation other = leaderless();
  other.plan = plan;
  other.self = "h2";
  other.local = LocalView{DataState::kLost};
  d = decide(other, "t");
  EXPECT_EQ(d.step, Step::kSetAsideData) << d.reason;
  other.local.plan_sequence = 2;
  EXPECT_NE(decide(other, "t").step, Step::kSetAsideData);
  // A plan listing two members is no recover-quorum plan.
  plan.members.push_back(plan_of({"h2"}).members[0]);
  EXPECT_THROW(parse_cluster_plan(cluster_plan_json(plan), "plan"), Error);
}

// A restore queued (and approved) while the quorum is lost: the newest source wins, as in `etcdadm
// recover`. The survivor at or past the backup's revision is recovered as a cluster of one (the
// plan names the command, which is done once that member has a leader); a backup further along is
// restored as asked, and so is one whose revision is not recorded.
TEST(ControllerDecideQuorum, ARestoreQueuedDuringALostQuorumTakesTheSurvivorWhenItIsFurtherAlong) {
  Observation o = leaderless();
  o.spec = EtcdManagerClusterSpec{3, "3.5.17"};
  o.plan = plan_of({"h1", "h2", "h3"});
  o.plan->sequence = 1;
  o.self_peer_url = "https://10.0.0.1:2380";
  EtcdManagerCommand cmd;
  cmd.key = "control/2027-01-15T08:00:00Z-000000/_command.json";
  cmd.restore_backup = EtcdManagerRestoreCommand{{0, ""}, "b1"};
  o.restore_command = cmd;
  o.restore_backup_revision = 1000;  // h1 is at 1234
  Decision d = decide(o, "tok");
  ASSERT_EQ(d.step, Step::kPlanQuorumRecovery) << d.reason;
  EXPECT_EQ(d.reason,
            "a restore of backup b1 (revision 1000) is queued (" + cmd.key +
                ") while the quorum is lost, and member h1 holds revision 1234: its data is the newer source: planning "
                "it as a cluster of one (its data dir set aside first), the other hosts to join it as the spec's 3 "
                "members");
  EXPECT_EQ(d.plan.purpose, "recover-quorum");
  EXPECT_EQ(d.plan.command_key, cmd.key);
  EXPECT_EQ(d.plan.recovers_member_id, 1u);
  EXPECT_EQ(d.plan.survivor_revision, 1234);
  EXPECT_EQ(d.plan.sequence, 2u);
  EXPECT_FALSE(d.new_spec);
  // The plan's record keeps the command (so it is planned once) and refuses a key outside control/.
  EXPECT_EQ(parse_cluster_plan(cluster_plan_json(d.plan), "plan").command_key, cmd.key);
  ClusterPlan forged = d.plan;
  forged.command_key = "control/../etcdadm-auto/plan.json";
  EXPECT_THROW(parse_cluster_plan(cluster_plan_json(forged), "plan"), Error);
  // A command asking for another version: the plan's, and the spec written after it.
  o.restore_command->restore_backup->cluster_spec.etcd_version = "3.6.5";
  d = decide(o, "tok");
  EXPECT_EQ(d.plan.etcd_version, "3.6.5");
  ASSERT_TRUE(d.new_spec);
  EXPECT_EQ(d.new_spec->etcd_version, "3.6.5");
  o.restore_command->restore_backup->cluster_spec.etcd_version = "";
  // Another host waits for h1's plan.
  Observation other = o;
  other.self = "h2";
  other.local = LocalView{};
  d = decide(other, "tok");
  EXPECT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find(": host h1 plans its recovery"), std::string::npos) << d.reason;
  // h1's controller gone: nobody plans; the person is told what to run.
  other.hosts[0].live = false;
  d = decide(other, "tok");
  EXPECT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("no live controller runs beside it (host h1)"), std::string::npos) << d.reason;
  EXPECT_NE(d.command.find("to restore the older backup instead, stop etcd on it"), std::string::npos) << d.command;

  // Planned: h1 carries it out (rule RQ), then, its member leading again, finishes the command.
  ClusterPlan plan = decide(o, "tok").plan;
  o.plan = plan;
  o.local.plan_sequence = 1;
  d = decide(o, "tok");
  EXPECT_EQ(d.step, Step::kRecoverQuorum) << d.reason;
  Observation done = o;
  done.local.plan_sequence = 2;
  done.local.has_leader = true;
  done.cluster.info.leader_id = 1;
  done.cluster.info.members = {done.cluster.info.members[0]};
  done.cluster.info.members[0].leader = true;
  d = decide(done, "tok");
  ASSERT_EQ(d.step, Step::kFinishRestore) << d.reason;
  EXPECT_EQ(d.reason, "the cluster recovered from member 1's data has a leader: the command is done");
  EXPECT_EQ(d.command, "etcdadm etcd-manager delete-command " + cmd.key + " --store s3://b/etcd");

  // The backup further along than every survivor, or its revision unknown: restored as asked.
  o.plan = plan_of({"h1", "h2", "h3"});
  o.plan->sequence = 1;
  o.restore_backup_revision = 1300;
  d = decide(o, "tok");
  EXPECT_EQ(d.step, Step::kPlanRestore) << d.reason;
  EXPECT_EQ(d.plan.backup, "b1");
  o.restore_backup_revision.reset();
  EXPECT_EQ(decide(o, "tok").step, Step::kPlanRestore);
}

}  // namespace
}  // namespace etcdadm

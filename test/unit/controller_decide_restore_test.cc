// Restores (controller/decide_restore.cc): the total loss, the auto-restore, the command queue's
// restore planned once and carried out once per host.
#include <gtest/gtest.h>

#include "controller/decide.h"
#include "test/support/controller_observations.h"

namespace etcdadm {
namespace {

using namespace decide_test;

// A cluster created from plan 1 of h1-h3, every member's data gone, every host live.
Observation total_loss() {
  Observation o = fresh(3);
  o.created_marker = true;
  o.plan = plan_of({"h1", "h2", "h3"});
  for (auto& h : o.hosts) h.record.data = DataState::kLost;
  o.local.data = DataState::kLost;
  return o;
}

std::string names_of_plan(const ClusterPlan& p) {
  std::string out;
  for (const auto& m : p.members) out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

EtcdManagerCommand restore_command(const std::string& backup, int members = 0) {
  EtcdManagerCommand c;
  c.timestamp_nanos = 1800000000000000000;
  c.key = "control/2027-01-15T08:00:00Z-000000/_command.json";
  c.restore_backup = EtcdManagerRestoreCommand{{members, ""}, backup};
  return c;
}

// Plan 4 of `names`, restoring backup b1 for restore_command("b1").
ClusterPlan restore_plan_of(std::initializer_list<const char*> names) {
  ClusterPlan p = plan_of(names);
  p.sequence = 4;
  p.purpose = "restore";
  p.backup = "b1";
  p.command_key = "control/2027-01-15T08:00:00Z-000000/_command.json";
  return p;
}

TEST(ControllerDecide, TotalLossWaitsForARestoreAndNeverPlansAnEmptyCluster) {
  Observation o = total_loss();
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_EQ(d.reason.rfind("total loss", 0), 0u) << d.reason;
  EXPECT_EQ(d.command,
            "etcdadm etcd-manager restore-backup latest --store s3://b/c (every host's controller restores the newest backup), "
            "or etcdadm seed --auto-restore on --store s3://b/c (the newest attested backup and its change log to its end, on every "
            "host at once)");
  EXPECT_NE(d.reason.find("auto-restore is off"), std::string::npos) << d.reason;
  // Without a plan (etcd-manager created it), and with every data dir empty: the same.
  o.plan.reset();
  for (auto& h : o.hosts) h.record.data = DataState::kEmpty;
  o.local.data = DataState::kEmpty;
  EXPECT_EQ(decide(o, "t").reason.rfind("total loss", 0), 0u);
  // One host still holds a member's data: not a total loss, no plan either.
  o.hosts[2].record.data = DataState::kMember;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("waiting for a quorum of them to come back"), std::string::npos) << d.reason;
}

// auto-restore on: the loss waits out the spec's delay, then one plan restores the newest backup
// and its change log to exactly the log's end with the sized bump; a plan that did not bring the
// cluster back is not followed by another within the hour.
TEST(ControllerDecide, AnAutoRestoreWaitsItsDelayThenPlansTheNewestBackupToTheLogsEndOnce) {
  Observation o = total_loss();
  for (auto& h : o.hosts) h.record.data = DataState::kEmpty;
  o.local.data = DataState::kEmpty;
  o.auto_spec.auto_restore = true;
  o.auto_spec.auto_restore_delay_seconds = 60;
  o.total_loss_seconds = 20;
  Decision d = decide(o, "etcd-auto-new");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_TRUE(d.total_loss);
  EXPECT_FALSE(d.waits_on_a_person) << "a total loss is followed every round: another host's plan comes through the store";
  EXPECT_NE(d.reason.find("for 20 s: auto-restore restores the newest attested backup and its change log once it has lasted 60 s"),
            std::string::npos) << d.reason;
  o.total_loss_seconds = 61;
  d = decide(o, "etcd-auto-new");
  EXPECT_EQ(d.step, Step::kWait) << "nothing read to restore yet";
  o.auto_restore = Observation::AutoRestoreCandidate{};
  o.auto_restore->problem = "no backup in s3://b/c";
  d = decide(o, "etcd-auto-new");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("nothing to restore: no backup"), std::string::npos) << d.reason;
  o.auto_restore = Observation::AutoRestoreCandidate{"2027-01-15T07:00:00Z-000001", std::string(64, 'a'), 5000, 7345, 23450, 234.5, o.now_unix - 10, ""};
  d = decide(o, "etcd-auto-new");
  ASSERT_EQ(d.step, Step::kPlanRestore) << d.reason;
  EXPECT_FALSE(d.total_loss);
  EXPECT_EQ(d.plan.purpose, "auto-restore");
  EXPECT_EQ(d.plan.sequence, 2u);
  EXPECT_EQ(d.plan.backup, "2027-01-15T07:00:00Z-000001");
  EXPECT_EQ(d.plan.to_revision, 7345);
  EXPECT_EQ(d.plan.backup_db_sha256, std::string(64, 'a')) << "every host restores the db the planner saw";
  EXPECT_EQ(d.plan.kubernetes_revision_bump, 23450u);
  EXPECT_TRUE(d.plan.command_key.empty());
  EXPECT_NE(d.reason.find("and its change log to its end, revision 7345"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("comes back at revision 30795 (moved 23450 past it: the log showed 234.5 revisions/s"), std::string::npos) << d.reason;
  EXPECT_NE(d.command.find("--to-revision 7345"), std::string::npos) << d.command;
  EXPECT_NE(d.command.find("--bump-revision 23450 --mark-compacted"), std::string::npos) << d.command;

  // The plan written: each listed host restores to exactly its revision.
  o.plan = d.plan;
  Decision mine = decide(o, "t");
  ASSERT_EQ(mine.step, Step::kRestoreMember) << mine.reason;
  EXPECT_NE(mine.command.find("--to-revision 7345"), std::string::npos) << mine.command;
  // Restored here, still a total loss (the restore failed elsewhere): no second plan within the hour.
  o.local.plan_sequence = 2;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("did not bring it back"), std::string::npos) << d.reason;
  o.now_unix += kAutoRestoreRetrySeconds;
  EXPECT_EQ(decide(o, "t").step, Step::kPlanRestore);
  // A restore queued by a person comes first.
  o.restore_command = restore_command("2027-01-15T06:00:00Z-000001");
  o.restore_db_sha256 = std::string(64, 'b');
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kPlanRestore);
  EXPECT_EQ(d.plan.purpose, "restore");
  EXPECT_EQ(d.plan.backup_db_sha256, std::string(64, 'b')) << "the db its approval binds";
}

// A signed restore plan written back into the store after a later plan made this host's member (a
// replay): its sequence is below the host's own, so it is neither restored nor set aside; the
// same plan above it is carried out.
TEST(ControllerDecide, AnOlderSignedPlanWrittenBackIsNeverCarriedOut) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.local.plan_sequence = 5;  // the plan that created the member
  o.plan = restore_plan_of({"h1", "h2", "h3"});  // sequence 4
  o.plan->command_key.clear();
  Decision d = decide(o, "t");
  EXPECT_NE(d.step, Step::kRestoreMember) << d.reason;
  EXPECT_NE(d.step, Step::kSetAsideData) << d.reason;
  o.local.plan_sequence = 3;
  EXPECT_EQ(decide(o, "t").step, Step::kRestoreMember);
}

// Rounds come faster only while a lost cluster's way back is made of them: auto-restore on and
// nobody answering (for at most the delay plus kHurrySeconds), and a young restore plan carried out.
TEST(ControllerDecide, RoundsAreHurriedOnlyWhileALostClusterCanComeBackByThem) {
  Observation o = total_loss();
  o.plan->written_unix = o.now_unix - 3600;  // the cluster's creation plan, long ago
  EXPECT_FALSE(hurried_round(o)) << "auto-restore off: a person restores, the store is asked at the normal pace";
  o.auto_spec.auto_restore = true;
  o.auto_spec.auto_restore_delay_seconds = 300;
  o.unanswered_seconds = 0;
  EXPECT_TRUE(hurried_round(o)) << "the hosts' records and the delay are counted by rounds";
  o.unanswered_seconds = 300 + kHurrySeconds - 1;
  EXPECT_TRUE(hurried_round(o));
  o.unanswered_seconds = 300 + kHurrySeconds;
  EXPECT_FALSE(hurried_round(o)) << "down for longer: the normal pace again";
  o.pause = PauseRecord{};
  o.unanswered_seconds = 0;
  EXPECT_FALSE(hurried_round(o)) << "paused: nothing acts";
  o.pause.reset();
  o.cluster.answered = true;
  EXPECT_FALSE(hurried_round(o)) << "a cluster that answers";
  // A restore plan being carried out (a person's queued restore, auto-restore off): hurried while young.
  o.cluster.answered = false;
  o.auto_spec.auto_restore = false;
  o.plan->purpose = "restore";
  o.plan->written_unix = o.now_unix - 5;
  EXPECT_TRUE(hurried_round(o));
  o.plan->written_unix = o.now_unix - kHurrySeconds;
  EXPECT_FALSE(hurried_round(o));
  o.plan->written_unix = o.now_unix - 5;
  o.plan->purpose = "create";
  EXPECT_FALSE(hurried_round(o)) << "a creation plan is followed at once by its own rule";
  o.plan->purpose = "auto-restore";
  o.cluster.answered = true;
  EXPECT_FALSE(hurried_round(o)) << "the restored cluster answers: done";
}

TEST(ControllerDecide, AQueuedRestoreIsPlannedOnceByAnyHostAfterATotalLossAndByTheLeadersWhileOneLeads) {
  // Total loss and a restore queued: any live host plans it (the
  // replace-if-match write lets one through), one sequence above the plan it replaces.
  Observation o = total_loss();
  o.restore_command = restore_command("2027-01-15T07:00:00Z-000001");
  Decision d = decide(o, "etcd-auto-new");
  ASSERT_EQ(d.step, Step::kPlanRestore) << d.reason;
  EXPECT_EQ(d.plan.sequence, 2u);
  EXPECT_EQ(d.plan.purpose, "restore");
  EXPECT_EQ(d.plan.backup, "2027-01-15T07:00:00Z-000001");
  EXPECT_EQ(d.plan.command_key, o.restore_command->key);
  EXPECT_EQ(d.plan.cluster_token, "etcd-auto-new");
  // Every host gives a Kubernetes keyspace the same bump: the plan says which.
  EXPECT_EQ(d.plan.kubernetes_revision_bump, 1000000000u);
  EXPECT_EQ(d.plan.initial_cluster(), "h1=https://10.0.0.1:2380,h2=https://10.0.0.2:2380,h3=https://10.0.0.3:2380");
  EXPECT_FALSE(d.new_spec);
  EXPECT_EQ(d.command.rfind("etcdadm init --from-backup 2027-01-15T07:00:00Z-000001 --store s3://b/c --initial-cluster h1=", 0), 0u) << d.command;
  // The command's own member count wins, and becomes the spec.
  o.restore_command = restore_command("b1", 1);
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kPlanRestore);
  EXPECT_EQ(d.plan.members.size(), 1u);
  ASSERT_TRUE(d.new_spec);
  EXPECT_EQ(*d.new_spec, (EtcdManagerClusterSpec{1, "3.5.17"}));
  // A single live host of three cannot restore: a quorum must start.
  o.restore_command = restore_command("b1");
  o.hosts.resize(1);
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("restoring backup b1 needs at least 2"), std::string::npos) << d.reason;

  // A cluster with a leader: only its leader's controller plans, after a backup (act()).
  Observation led = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  led.restore_command = restore_command("b1");
  led.plan = plan_of({"h1", "h2", "h3"});
  d = decide(led, "t");
  ASSERT_EQ(d.step, Step::kPlanRestore);
  EXPECT_NE(d.reason.find("replacing the running cluster (after a backup of it)"), std::string::npos) << d.reason;
  led.cluster.info.leader_id = 2;
  d = decide(led, "t");
  EXPECT_EQ(d.step, Step::kIdle);
  EXPECT_NE(d.reason.find("the leader's controller plans it"), std::string::npos) << d.reason;
}

TEST(ControllerDecide, ARestorePlanIsCarriedOutOncePerHostAndTheCommandGoesWhenTheClusterHasALeader) {
  Observation o = fresh(3);
  o.created_marker = true;
  ClusterPlan p = restore_plan_of({"h1", "h2"});
  o.plan = p;
  o.restore_command = restore_command("b1");
  o.local = LocalView{DataState::kMember, "etcd-auto-old", true, true, 1, 77, 3};
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRestoreMember) << d.reason;
  EXPECT_EQ(d.plan, p);
  EXPECT_NE(d.reason.find("its old data is set aside, not deleted"), std::string::npos) << d.reason;
  EXPECT_EQ(d.command, "etcdadm init --from-backup b1 --store s3://b/c --initial-cluster "
                       "h1=https://10.0.0.1:2380,h2=https://10.0.0.2:2380 --initial-cluster-token "
                       "etcd-auto-0123456789abcdef --name h1");
  // Another CA: never.
  o.plan->ca_sha256 = std::string(64, 'b');
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  o.plan->ca_sha256 = kCa;
  // Left out of the plan: its old member stops and its data goes aside; an empty host has nothing to do.
  o.self = "h3";
  o.self_peer_url = "https://10.0.0.3:2380";
  EXPECT_EQ(decide(o, "t").step, Step::kSetAsideData);
  o.local = LocalView{};
  EXPECT_NE(decide(o, "t").step, Step::kSetAsideData);
  // Carried out (this host's data is plan 4's) and its member has a leader: the command is deleted.
  o.self = "h1";
  o.self_peer_url = "https://10.0.0.1:2380";
  o.local = LocalView{DataState::kMember, p.cluster_token, true, true, 1, 78, 4};
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kFinishRestore) << d.reason;
  EXPECT_EQ(d.command, "etcdadm etcd-manager delete-command control/2027-01-15T08:00:00Z-000000/_command.json --store s3://b/c");
  EXPECT_FALSE(d.new_spec) << "the store's spec is the command's";
  // The planner killed between the plan and the spec it writes after it: the host that finishes the
  // restore writes the spec the command asks for before the command goes.
  o.restore_command = restore_command("b1", 2);
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kFinishRestore) << d.reason;
  ASSERT_TRUE(d.new_spec);
  EXPECT_EQ(d.new_spec->member_count, 2);
  o.restore_command = restore_command("b1");
  // Never carried out twice: with the command gone, plan 4 asks nothing more of this host.
  o.restore_command.reset();
  EXPECT_NE(decide(o, "t").step, Step::kRestoreMember);
  o.local.data = DataState::kLost;  // restored, then lost: waits to be replaced like any other member
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  // A queue that cannot be read stops everything but waiting.
  o.record_problems = {"the command queue (control/): control/x/_command.json is not JSON"};
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("control/x/_command.json is not JSON"), std::string::npos) << d.reason;
}

// Found in review: with five hosts, spec 3 and the cluster on h3-h5, a queued restore was planned
// on h1-h3 (the live hosts by name): the restored cluster had a quorum while h4 and h5 still held
// one of the old. The running cluster's voters are listed first.
TEST(ControllerDecide, ARestorePlanListsTheRunningClustersVotersFirst) {
  Observation o = fresh(5);
  o.created_marker = true;
  o.plan = plan_of({"h3", "h4", "h5"});
  o.self = "h3";
  o.self_peer_url = "https://10.0.0.3:2380";
  o.self_client_url = "https://10.0.0.3:2379";
  o.local = LocalView{DataState::kMember, "etcd-auto-x", true, true, 3, 77};
  for (int i = 2; i < 5; ++i) o.hosts[i].record.data = DataState::kMember;
  o.cluster = cluster_of({member(3, "h3"), member(4, "h4"), member(5, "h5")}, 3);
  o.restore_command = restore_command("2027-01-15T07:00:00Z-000001");
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kPlanRestore) << d.reason;
  EXPECT_EQ(names_of_plan(d.plan), "h3, h4, h5");
  EXPECT_EQ(d.plan.replaces_cluster_id, 77u) << "the cluster it replaces, as it answered";
  EXPECT_EQ(parse_cluster_plan(cluster_plan_json(d.plan), "plan").replaces_cluster_id, 77u);
  // Asked for four: the three voters, then a spare.
  o.restore_command = restore_command("2027-01-15T07:00:00Z-000001", 4);
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kPlanRestore) << d.reason;
  EXPECT_EQ(names_of_plan(d.plan), "h3, h4, h5, h1");
  // No cluster answers: the hosts whose records say they hold a member's data first.
  o.cluster = ClusterView{};
  o.local.etcd_running = false;
  o.restore_command = restore_command("2027-01-15T07:00:00Z-000001");
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kPlanRestore) << d.reason;
  EXPECT_EQ(names_of_plan(d.plan), "h3, h4, h5");
  EXPECT_EQ(d.plan.replaces_cluster_id, 0u);
}

// Found in review: nothing kept the restored cluster from serving while the old one still did (the
// hosts of old voters that a plan leaves out stop theirs only when their controllers run). A listed
// host with its data restored starts its member only once no member of the replaced cluster
// answers with a leader.
TEST(ControllerDecide, ARestoredMemberStartsOnlyOnceTheClusterItReplacesHasNoLeader) {
  Observation o = fresh(5);
  o.created_marker = true;
  ClusterPlan p = restore_plan_of({"h1", "h4", "h5"});
  p.replaces_cluster_id = 77;
  o.plan = p;
  o.restore_command = restore_command("b1");
  // Restored (the data is plan 4's), not started: h2 and h3 still run the old cluster with a leader.
  o.local = LocalView{DataState::kMember, p.cluster_token, false, false, 0, 0, 4};
  o.replaced_cluster_leader = "https://10.0.0.2:2379";
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("starts once the cluster the plan replaces (ID 4d) has no leader: its member at "
                          "https://10.0.0.2:2379 still answers with one"),
            std::string::npos)
      << d.reason;
  EXPECT_EQ(d.command, "etcdadm reset --skip-remove-member (on the host of https://10.0.0.2:2379), or start its controller");
  o.replaced_cluster_leader.clear();
  EXPECT_EQ(decide(o, "t").step, Step::kStartLocalMember);
}

// Found in review: a total loss was judged from reports that fail open. Data that cannot be told
// (a data dir not on its member's device, a host record that does not parse) may be intact: no
// total loss is seen, so no auto-restore sets it aside.
TEST(ControllerDecide, DataThatCannotBeToldIsNeverCountedLost) {
  Observation o = fresh(3);
  o.created_marker = true;
  o.auto_spec.auto_restore = true;
  for (auto& h : o.hosts) h.record.data = DataState::kLost;
  o.local.data = DataState::kLost;
  EXPECT_TRUE(total_loss(o));
  o.hosts[2].record.data = DataState::kUnavailable;
  EXPECT_FALSE(total_loss(o));
  o.hosts[2].record.data = DataState::kLost;
  o.unreadable_host_records = {"s3://b/c/etcdadm-auto/hosts/h4.json is not JSON"};
  EXPECT_FALSE(total_loss(o));
  o.unreadable_host_records.clear();
  // This host's own dir unavailable: it waits, and starts, sets aside or restores nothing.
  o.local.data = DataState::kUnavailable;
  o.local.data_problem = "/var/lib/etcd is empty and not on the device its member's data was on";
  EXPECT_FALSE(total_loss(o));
  o.plan = plan_of({"h1", "h2", "h3"});
  o.plan->sequence = 4;
  o.plan->purpose = "restore";
  o.plan->backup = "2027-01-15T07:00:00Z-000001";
  o.plan->command_key = "control/2027-01-15T08:00:00Z-000000/_command.json";
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("cannot be told apart from lost data: /var/lib/etcd is empty"), std::string::npos) << d.reason;
  EXPECT_TRUE(d.waits_on_a_person);
}

}  // namespace
}  // namespace etcdadm

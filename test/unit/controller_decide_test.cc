// The controller's decisions (controller/decide.h) with known answers, and its records
// (controller/records.h) as hostile input.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "common/error.h"
#include "controller/decide.h"
#include "controller/records.h"
#include "common/fs.h"
#include "etcdadm/pki.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

constexpr const char* kCa = "ca0000000000000000000000000000000000000000000000000000000000000a";

HostView host(const std::string& name, bool live = true, const std::string& data = "empty") {
  HostView h;
  h.record.name = name;
  h.record.peer_url = "https://10.0.0." + std::to_string(name.back() - '0') + ":2380";
  h.record.client_url = "https://10.0.0." + std::to_string(name.back() - '0') + ":2379";
  h.record.ca_sha256 = kCa;
  h.record.data = data;
  h.live = live;
  return h;
}

// Host h1 of a store seeded for 3 members of 3.5.17, nothing else yet.
Observation fresh(int hosts_live = 1) {
  Observation o;
  o.self = "h1";
  o.self_peer_url = "https://10.0.0.1:2380";
  o.self_client_url = "https://10.0.0.1:2379";
  o.ca_sha256 = kCa;
  o.store_url = "s3://b/c";
  o.spec = EtcdManagerClusterSpec{3, "3.5.17"};
  o.now_unix = 1800000000;
  for (int i = 1; i <= hosts_live; ++i) o.hosts.push_back(host("h" + std::to_string(i)));
  return o;
}

// Member `id` of host h<id>, answering with a leader unless `healthy` is false.
MemberInfo member(uint64_t id, const std::string& name, bool healthy = true, bool learner = false) {
  MemberInfo m;
  m.id = id;
  m.name = name;
  m.peer_urls = {"https://10.0.0." + std::to_string(id) + ":2380"};
  if (!name.empty()) m.client_urls = {"https://10.0.0." + std::to_string(id) + ":2379"};
  m.reachable = healthy;
  m.learner = learner;
  if (healthy) m.version = "3.5.17";  // the spec's (a member that does not answer tells none)
  return m;
}

ClusterView cluster_of(std::vector<MemberInfo> members, uint64_t leader) {
  ClusterView v;
  v.answered = true;
  v.info.cluster_id = 77;
  v.info.leader_id = leader;
  for (auto& m : members) m.leader = m.id == leader;
  v.info.members = std::move(members);
  return v;
}

// h1 as the leader's controller of a cluster that was created.
Observation acting(std::vector<MemberInfo> members, int hosts = 3) {
  Observation o = fresh(hosts);
  o.created_marker = true;
  o.local = LocalView{"member", "etcd-auto-x", true, true, 1, 77};
  for (auto& h : o.hosts) h.record.data = "member";
  o.cluster = cluster_of(std::move(members), 1);
  return o;
}

ClusterPlan plan_of(std::initializer_list<const char*> names) {
  ClusterPlan p;
  p.cluster_token = "etcd-auto-0123456789abcdef";
  p.etcd_version = "3.5.17";
  p.ca_sha256 = kCa;
  for (const char* n : names) {
    HostView h = host(n);
    p.members.push_back({h.record.name, h.record.peer_url, h.record.client_url});
  }
  return p;
}

TEST(ControllerDecide, AQuorumOfHostsPlansOnceAllAreThereOrTheSettleWindowPassed) {
  Observation o = fresh(1);
  Decision d = decide(o, "etcd-auto-t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("1 of the spec's 3 hosts are registered and live; a new cluster needs at least 2"), std::string::npos) << d.reason;

  o = fresh(2);  // a quorum, but not all: wait for the third within the settle window
  d = decide(o, "etcd-auto-t");
  EXPECT_EQ(d.step, Step::kIdle);
  EXPECT_NE(d.reason.find("waiting up to 30 s more"), std::string::npos) << d.reason;
  o.quorum_seen_seconds = 30;  // the window passed: plan with the two
  d = decide(o, "etcd-auto-t");
  ASSERT_EQ(d.step, Step::kPlanCluster);
  EXPECT_EQ(d.plan.initial_cluster(), "h1=https://10.0.0.1:2380,h2=https://10.0.0.2:2380");

  o = fresh(3);
  d = decide(o, "etcd-auto-t");
  ASSERT_EQ(d.step, Step::kPlanCluster) << d.reason;
  EXPECT_EQ(d.plan.sequence, 1u);
  EXPECT_EQ(d.plan.cluster_token, "etcd-auto-t");
  EXPECT_EQ(d.plan.etcd_version, "3.5.17");
  EXPECT_EQ(d.plan.members.size(), 3u);
  EXPECT_EQ(d.command,
            "etcdadm init --initial-cluster h1=https://10.0.0.1:2380,h2=https://10.0.0.2:2380,h3=https://10.0.0.3:2380 "
            "--initial-cluster-token etcd-auto-t (on each of h1, h2, h3)");
}

TEST(ControllerDecide, ThePlanTakesLiveHostsOfThisCaByNameAndNoMoreThanTheSpec) {
  Observation o = fresh(0);
  for (const char* n : {"h5", "h1", "h4", "h2", "h3"}) o.hosts.push_back(host(n));
  o.hosts[3].live = false;                      // h2: not heard from
  o.hosts[4].record.ca_sha256 = "another-ca";  // h3: another CA
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kPlanCluster) << d.reason;
  EXPECT_EQ(d.plan.initial_cluster(), "h1=https://10.0.0.1:2380,h4=https://10.0.0.4:2380,h5=https://10.0.0.5:2380");
  EXPECT_NE(d.reason.find("hosts with another CA, never planned with this one: h3"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("hosts not heard from lately: h2"), std::string::npos) << d.reason;
}

TEST(ControllerDecide, APlannedHostStartsItsMemberOnlyBeforeCreationOrWhenTheClusterStillWaitsForIt) {
  Observation o = fresh(3);
  o.plan = plan_of({"h1", "h2", "h3"});
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kStartPlannedMember) << d.reason;
  EXPECT_EQ(d.plan, *o.plan);
  EXPECT_EQ(d.command.rfind("etcdadm init --initial-cluster h1=", 0), 0u) << d.command;

  // Created without this host, which started late: its member is still unstarted (no name).
  o.created_marker = true;
  o.hosts[1].record.data = "member";
  o.cluster = cluster_of({member(1, "", false), member(2, "h2"), member(3, "h3")}, 2);
  EXPECT_EQ(decide(o, "t").step, Step::kStartPlannedMember);
  // Its member was replaced meanwhile: the plan is history for it.
  o.cluster.info.members[0].peer_urls = {"https://10.0.0.9:2380"};
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);
  // A plan for another CA is refused.
  o = fresh(3);
  o.plan = plan_of({"h1", "h2", "h3"});
  o.plan->ca_sha256 = "another-ca";
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("for another CA"), std::string::npos) << d.reason;
}

// A cluster created from plan 1 of h1-h3, every member's data gone, every host live.
Observation total_loss() {
  Observation o = fresh(3);
  o.created_marker = true;
  o.plan = plan_of({"h1", "h2", "h3"});
  for (auto& h : o.hosts) h.record.data = "lost";
  o.local.data = "lost";
  return o;
}

TEST(ControllerDecide, TotalLossWaitsForARestoreAndNeverPlansAnEmptyCluster) {
  Observation o = total_loss();
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_EQ(d.reason.rfind("total loss", 0), 0u) << d.reason;
  EXPECT_EQ(d.command,
            "etcdadm etcd-manager restore-backup latest --store s3://b/c (every host's controller restores the newest backup), "
            "or etcdadm seed --auto-restore on --store s3://b/c (the newest backup and its change log to its end, on every "
            "host at once)");
  EXPECT_NE(d.reason.find("auto-restore is off"), std::string::npos) << d.reason;
  // Without a plan (etcd-manager created it), and with every data dir empty: the same.
  o.plan.reset();
  for (auto& h : o.hosts) h.record.data = "empty";
  o.local.data = "empty";
  EXPECT_EQ(decide(o, "t").reason.rfind("total loss", 0), 0u);
  // One host still holds a member's data: not a total loss, no plan either.
  o.hosts[2].record.data = "member";
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("waiting for a quorum of them to come back"), std::string::npos) << d.reason;
}

EtcdManagerCommand restore_command(const std::string& backup, int members = 0) {
  EtcdManagerCommand c;
  c.timestamp_nanos = 1800000000000000000;
  c.key = "control/2027-01-15T08:00:00Z-000000/_command.json";
  c.restore_backup = EtcdManagerRestoreCommand{{members, ""}, backup};
  return c;
}

// auto-restore on: the loss waits out the spec's delay, then one plan restores the newest backup
// and its change log to exactly the log's end with the sized bump; a plan that did not bring the
// cluster back is not followed by another within the hour.
TEST(ControllerDecide, AnAutoRestoreWaitsItsDelayThenPlansTheNewestBackupToTheLogsEndOnce) {
  Observation o = total_loss();
  for (auto& h : o.hosts) h.record.data = "empty";
  o.local.data = "empty";
  o.auto_spec.auto_restore = true;
  o.auto_spec.auto_restore_delay_seconds = 60;
  o.total_loss_seconds = 20;
  Decision d = decide(o, "etcd-auto-new");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_TRUE(d.total_loss);
  EXPECT_NE(d.reason.find("for 20 s: auto-restore restores the newest backup and its change log once it has lasted 60 s"),
            std::string::npos) << d.reason;
  o.total_loss_seconds = 61;
  d = decide(o, "etcd-auto-new");
  EXPECT_EQ(d.step, Step::kWait) << "nothing read to restore yet";
  o.auto_restore = Observation::AutoRestoreCandidate{};
  o.auto_restore->problem = "no backup in s3://b/c";
  d = decide(o, "etcd-auto-new");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("nothing to restore: no backup"), std::string::npos) << d.reason;
  o.auto_restore = Observation::AutoRestoreCandidate{"2027-01-15T07:00:00Z-000001", 5000, 7345, 23450, 234.5, o.now_unix - 10, ""};
  d = decide(o, "etcd-auto-new");
  ASSERT_EQ(d.step, Step::kPlanRestore) << d.reason;
  EXPECT_FALSE(d.total_loss);
  EXPECT_EQ(d.plan.purpose, "auto-restore");
  EXPECT_EQ(d.plan.sequence, 2u);
  EXPECT_EQ(d.plan.backup, "2027-01-15T07:00:00Z-000001");
  EXPECT_EQ(d.plan.to_revision, 7345);
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
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kPlanRestore);
  EXPECT_EQ(d.plan.purpose, "restore");
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
  ClusterPlan p = plan_of({"h1", "h2"});
  p.sequence = 4;
  p.purpose = "restore";
  p.backup = "b1";
  p.command_key = "control/2027-01-15T08:00:00Z-000000/_command.json";
  o.plan = p;
  o.restore_command = restore_command("b1");
  o.local = LocalView{"member", "etcd-auto-old", true, true, 1, 77, 3};
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
  o.local = LocalView{"member", p.cluster_token, true, true, 1, 78, 4};
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kFinishRestore) << d.reason;
  EXPECT_EQ(d.command, "etcdadm etcd-manager delete-command control/2027-01-15T08:00:00Z-000000/_command.json --store s3://b/c");
  // Never carried out twice: with the command gone, plan 4 asks nothing more of this host.
  o.restore_command.reset();
  EXPECT_NE(decide(o, "t").step, Step::kRestoreMember);
  o.local.data = "lost";  // restored, then lost: waits to be replaced like any other member
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  // A queue that cannot be read stops everything but waiting.
  o.queue_problem = "control/x/_command.json is not JSON";
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("the command queue cannot be read"), std::string::npos);
}

TEST(ControllerDecide, NoMarkerButDataSomewhereIsNeverPlannedOver) {
  Observation o = fresh(3);
  o.hosts[1].record.data = "member";
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("hosts hold member data (h2 (member))"), std::string::npos) << d.reason;
}

TEST(ControllerDecide, LocalStepsAndTheMarker) {
  Observation o = fresh(3);
  o.plan = plan_of({"h1", "h2", "h3"});
  o.local.data = "member";
  EXPECT_EQ(decide(o, "t").step, Step::kStartLocalMember);
  o.local.etcd_running = true;
  o.local.member_id = 1;
  o.local.cluster_id = 77;
  o.cluster = cluster_of({member(1, "h1"), member(2, "h2", false), member(3, "h3", false)}, 0);
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);  // no leader yet
  o.local.has_leader = true;
  EXPECT_EQ(decide(o, "t").step, Step::kMarkCreated);
  o.created_marker = true;
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);
  // Lost data is never started, whatever else holds.
  o.local.data = "lost";
  o.local.etcd_running = false;
  o.hosts[1].record.data = "member";
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_EQ(d.command.rfind("etcdadm join --replace h1", 0), 0u) << d.command;
}

TEST(ControllerDecide, PauseAndMissingSpecComeFirst) {
  Observation o = fresh(3);
  o.pause = PauseRecord{"ops@bastion", "disk swap", 0};
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_EQ(d.reason, "paused by ops@bastion (disk swap): no controller acts");
  EXPECT_EQ(d.command, "etcdadm auto resume --store s3://b/c");
  o.pause.reset();
  o.spec.reset();
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_EQ(d.command, "etcdadm seed --store s3://b/c --members 3 --version <etcd version>");
}

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

TEST(ControllerDecide, GrowsWithALiveSpareLearnerFirstThenPromotesAndShrinksNeverTheLeaderFirst) {
  Observation o = acting({member(1, "h1"), member(2, "h2")}, 4);
  o.hosts[2].record.data = "empty";  // h3: a spare
  o.hosts[3].record.data = "empty";  // h4: a spare, not live
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
  // Five members, spec three: the highest name that is not the leader goes, one at a time.
  o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3"), member(4, "h4"), member(5, "h5")}, 5);
  o.cluster.info.leader_id = 5;
  o.local.member_id = 5;
  o.self = "h5";
  o.self_peer_url = "https://10.0.0.5:2380";
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 4u);
  // An unhealthy one goes first, at once, when there are too many.
  o.cluster.info.members[1].reachable = false;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 2u);
}

TEST(ControllerDecide, AnAddedHostJoinsAndARemovedHostForgetsItsMember) {
  Observation o = fresh(3);
  o.created_marker = true;
  o.hosts[1].record.data = "member";
  o.cluster = cluster_of({member(1, "", true, true), member(2, "h2"), member(3, "h3")}, 2);
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kJoinAsAdded) << d.reason;
  EXPECT_EQ(d.join_endpoint, "https://10.0.0.2:2379");
  EXPECT_EQ(d.member_id, 1u) << "the learner this host becomes, recorded before it starts";
  // Removed: its cluster answers without it.
  o.cluster = cluster_of({member(2, "h2"), member(3, "h3")}, 2);
  o.local = LocalView{"member", "x", false, false, 1, 77};
  EXPECT_EQ(decide(o, "t").step, Step::kForgetMember);
  // Another cluster's word does not count.
  o.cluster.info.cluster_id = 78;
  EXPECT_EQ(decide(o, "t").step, Step::kStartLocalMember);
  // Lost data, member removed: a spare again.
  o.cluster.info.cluster_id = 77;
  o.local.data = "lost";
  EXPECT_EQ(decide(o, "t").step, Step::kForgetMember);
  // Lost data, member still listed: wait to be removed.
  o.cluster = cluster_of({member(1, "h1", false), member(2, "h2"), member(3, "h3")}, 2);
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
}

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
  o.hosts[1].record.data = "empty";
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
  for (auto& h : o.hosts) h.record.data = "member";
  set_member_ids(o);
  o.local = LocalView{"member", "x", true, true, 1, 77};
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
}

TEST(ControllerRecords, RoundTripAndHostileInputIsRefusedByName) {
  ClusterPlan p = plan_of({"h1", "h2"});
  p.written_by = "h1";
  p.written_unix = 1800000000;
  EXPECT_EQ(parse_cluster_plan(cluster_plan_json(p), "plan"), p);
  ClusterPlan r = p;
  r.purpose = "restore";
  r.backup = "2027-01-15T07:00:00Z-000001";
  r.command_key = "control/2027-01-15T08:00:00Z-000000/_command.json";
  EXPECT_EQ(parse_cluster_plan(cluster_plan_json(r), "plan"), r);
  r.kubernetes_revision_bump = 1000000000;
  EXPECT_EQ(parse_cluster_plan(cluster_plan_json(r), "plan"), r);
  {
    ClusterPlan a = r;
    a.purpose = "auto-restore";
    a.command_key.clear();
    a.to_revision = 7345;
    a.kubernetes_revision_bump = 23450;
    const std::string aj = cluster_plan_json(a);
    EXPECT_EQ(aj.find("\"command\""), std::string::npos) << aj;
    EXPECT_EQ(parse_cluster_plan(aj, "plan"), a);
    auto no_target = nlohmann::json::parse(aj);
    no_target.erase("toRevision");
    EXPECT_THROW(parse_cluster_plan(no_target.dump(), "plan"), Error);
    no_target["toRevision"] = -1;
    EXPECT_THROW(parse_cluster_plan(no_target.dump(), "plan"), Error);
  }
  const std::string rj = cluster_plan_json(r);
  // A restore plan written before the field existed: its hosts restored every keyspace as it was.
  {
    auto old_plan = nlohmann::json::parse(rj);
    old_plan.erase("kubernetesRevisionBump");
    EXPECT_EQ(parse_cluster_plan(old_plan.dump(), "plan").kubernetes_revision_bump, 0u);
  }
  HostRecord h = host("h3").record;
  h.sequence = 7;
  h.data = "member";
  h.member_id = 0xdeadbeef;
  h.certs_expire_unix = 1830000000;
  h.ca_expires_unix = 2100000000;
  EXPECT_EQ(parse_host_record(host_record_json(h), "host"), h);
  AutoSpec s{120, 5};
  EXPECT_EQ(parse_auto_spec(auto_spec_json(s), "spec"), s);

  auto corrupt = [](const std::function<void()>& f, const std::string& expected) {
    try {
      f();
      ADD_FAILURE() << "expected kCorrupt: " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  std::string j = cluster_plan_json(p);
  corrupt([&] { parse_cluster_plan("{", "plan"); }, "plan is not JSON");
  for (const char* bad : {"-1", "1.5", "4611686018427387904", "\"1000\""}) {
    auto hostile = nlohmann::json::parse(rj);
    hostile["kubernetesRevisionBump"] = nlohmann::json::parse(bad);
    try {
      parse_cluster_plan(hostile.dump(), "plan");
      ADD_FAILURE() << "kubernetesRevisionBump " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << bad;
      EXPECT_NE(std::string(e.what()).find("kubernetesRevisionBump"), std::string::npos) << e.what();
    }
  }
  corrupt([&] { parse_cluster_plan(R"({"format":"etcdadm-auto-plan/2"})", "plan"); }, "not \"etcdadm-auto-plan/1\"");
  corrupt([&] { parse_cluster_plan(std::string(j).replace(j.find("h2\""), 2, "../x"), "plan"); }, "no usable member name");
  corrupt([&] { parse_cluster_plan(std::string(j).replace(j.find("https://10.0.0.2:2380"), 8, "http://"), "plan"); }, "no https:// URL");
  corrupt([&] { parse_cluster_plan(std::string(j).replace(j.find("https://10.0.0.2:2380"), 21, "https://10.0.0.1:2380"), "plan"); }, "listed twice");
  corrupt([&] { parse_cluster_plan(std::string(j).replace(j.find("\"sequence\": 1"), 13, "\"sequence\": -1"), "plan"); }, "not an integer in range");
  corrupt([&] { parse_cluster_plan(std::string(rj).replace(rj.find("control/"), 8, "../../"), "plan"); }, "not a command key");
  corrupt([&] { parse_cluster_plan(std::string(rj).replace(rj.find("2027-01-15T07"), 4, "a/.."), "plan"); }, "no backup name");
  corrupt([&] { parse_cluster_plan(std::string(j).replace(j.find("\"create\""), 8, "\"upgrade\""), "plan"); }, "not one this etcdadm knows");
  std::string hj = host_record_json(h);
  corrupt([&] { parse_host_record(std::string(hj).replace(hj.find("\"member\""), 8, "\"mine\""), "host"); }, "not empty, member or lost");
  corrupt([&] { parse_auto_spec(R"({"format":"etcdadm-auto-spec/1","replaceAfterSeconds":0})", "spec"); }, "out of range");
  VersionTurn t{3, "h2", 0x8e9e05c52164694d, "3.6.11", "3.7.3", "h1", 1800000000};
  const std::string tj = version_turn_json(t);
  EXPECT_NE(tj.find("\"memberID\": \"8e9e05c52164694d\""), std::string::npos) << tj;
  EXPECT_EQ(parse_version_turn(tj, "turn"), t);
  corrupt([&] { parse_version_turn(std::string(tj).replace(tj.find("8e9e05"), 6, "zz9e05"), "turn"); }, "no member ID");
  corrupt([&] { parse_version_turn(std::string(tj).replace(tj.find("3.7.3"), 5, "three"), "turn"); }, "no etcd versions");
  corrupt([&] { parse_version_turn(std::string(tj).replace(tj.find("\"h2\""), 4, "\"../h\""), "turn"); }, "no usable member name");
  corrupt([&] { parse_version_turn(std::string(tj).replace(tj.find("turn/1"), 6, "turn/2"), "turn"); }, "not \"etcdadm-auto-version-turn/1\"");
}

TEST(ControllerRecords, EventKeysSortInTimeOrder) {
  AutoEvent a{1800000000000001, "h2", "plan-cluster", "", "", "done"};
  AutoEvent b{1800000000100000, "h1", "wait", "", "", "waiting"};
  EXPECT_EQ(auto_event_key(a), "etcdadm-auto/events/20270115T080000.000001Z-h2.json");
  EXPECT_LT(auto_event_key(a), auto_event_key(b));
  EXPECT_EQ(parse_auto_event(auto_event_json(a), "event").time_micros, a.time_micros);
}

}  // namespace
}  // namespace etcdadm

namespace etcdadm {
namespace {

constexpr int64_t kMiB = 1 << 20;

// Member sizes: `size` of which `in_use` in use.
void sized(MemberInfo& m, int64_t size, int64_t in_use) {
  m.db_size = size;
  m.db_size_in_use = in_use;
}

TEST(ControllerDecide, FragmentedMembersAreDefragmentedFollowersFirstTheLeaderLastOnlyWhenSettled) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.auto_spec.defrag_free_percent = 50;
  o.auto_spec.defrag_min_free_bytes = 100 * kMiB;
  sized(o.cluster.info.members[0], 1000 * kMiB, 300 * kMiB);  // the leader: 70% free
  sized(o.cluster.info.members[1], 1000 * kMiB, 600 * kMiB);  // 40%: not due
  sized(o.cluster.info.members[2], 400 * kMiB, 100 * kMiB);   // 75%
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kDefragment) << d.reason;
  EXPECT_EQ(d.members, (std::vector<uint64_t>{3, 1}));
  EXPECT_EQ(d.command, "etcdadm defrag --member 1 --member 3 --store s3://b/c");
  EXPECT_NE(d.reason.find("h3 (3): 75% of 400.0 MiB free; h1 (1): 70% of 1000.0 MiB free"), std::string::npos) << d.reason;
  // The bytes rule: 75% of a small file is not worth it.
  o.auto_spec.defrag_min_free_bytes = 400 * kMiB;
  d = decide(o, "t");
  EXPECT_EQ(d.members, (std::vector<uint64_t>{1}));
  // Off, and nothing is due.
  o.auto_spec.defrag_free_percent = 0;
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);
  // A member down: the replacement rules come first, no defrag meanwhile.
  o.auto_spec.defrag_free_percent = 50;
  o.cluster.info.members[1].reachable = false;
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  // A CORRUPT alarm: wait, never defragment.
  o.cluster.info.members[1].reachable = true;
  o.cluster.info.members[1].errors = {"memberID:2 alarm:CORRUPT"};
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("CORRUPT"), std::string::npos) << d.reason;
}

TEST(ControllerDecide, TheDefragScheduleCountsFromEachMembersLastDefrag) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.auto_spec.defrag_free_percent = 0;
  o.auto_spec.defrag_schedule = "@every 72h";
  o.maintenance.defrags[1] = MemberDefrag{o.now_unix - 3600, 0, 0, 0};        // an hour ago
  o.maintenance.defrags[2] = MemberDefrag{o.now_unix - 73 * 3600, 0, 0, 0};   // 73 h ago
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kDefragment) << d.reason;
  EXPECT_EQ(d.members, (std::vector<uint64_t>{2, 3})) << "h3 was never defragmented";
  EXPECT_NE(d.reason.find("h3 (3): due on the schedule @every 72h (never defragmented)"), std::string::npos) << d.reason;
  o.maintenance.defrags[2].unix = o.now_unix;
  o.maintenance.defrags[3] = MemberDefrag{o.now_unix, 0, 0, 0};
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);
}

TEST(ControllerDecide, NospaceIsRecoveredFirstAndAFailedRecoveryWaitsItsRetryUnlessTheMarginChanged) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  for (auto& m : o.cluster.info.members) m.errors = {"memberID:2 alarm:NOSPACE "};
  o.cluster.info.members.push_back(member(4, "h4"));  // one voter too many: still NOSPACE first
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRecoverSpace) << d.reason;
  EXPECT_EQ(d.command, "etcdadm alarm recover --keep-revisions 1000 --store s3://b/c");
  SpaceRecoveryRecord failed;
  failed.unix = o.now_unix - 60;
  failed.host = "h2";
  failed.keep_revisions = 1000;
  failed.note = "too much data";
  o.maintenance.last_space_recovery = failed;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("the recovery at 2027-01-15T07:59:00Z (by h2) could not get under the quota: too much data; tried again at 2027-01-15T08:09:00Z"),
            std::string::npos)
      << d.reason;
  o.auto_spec.nospace_keep_revisions = 10;  // another margin: at once
  EXPECT_EQ(decide(o, "t").step, Step::kRecoverSpace);
  o.auto_spec.nospace_keep_revisions = 1000;
  o.now_unix += kSpaceRetrySeconds;  // the retry is due
  EXPECT_EQ(decide(o, "t").step, Step::kRecoverSpace);
  // With CORRUPT beside it: wait.
  o.cluster.info.members[0].errors.push_back("memberID:3 alarm:CORRUPT");
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
}

// Corrupt members: a voter whose HashKV differs from an agreeing majority is removed (recorded
// first, no backup from it), one without a majority waits for a person, etcd's CORRUPT alarm waits
// for a comparison and is disarmed only after a replacement, and the removed member's host keeps
// its data aside.
Observation::HashCheck hashes_of(std::initializer_list<uint32_t> hashes) {
  Observation::HashCheck c;
  c.survey.revision = 900;
  uint64_t id = 0;
  for (uint32_t h : hashes) {
    ++id;
    c.survey.members.push_back(MemberHash{id, "h" + std::to_string(id) + " (" + std::to_string(id) + ")", true, h, 40, ""});
  }
  c.verdict = judge_hashes(c.survey);
  return c;
}

TEST(ControllerDecide, ACorruptMemberIsReplacedAndItsAlarmDisarmedOnlyAfterwards) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.hashes = hashes_of({5, 5, 6});
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 3u);
  ASSERT_TRUE(d.corrupt);
  EXPECT_EQ(d.corrupt->revision, 900);
  EXPECT_EQ(d.corrupt->hash, 6u);
  EXPECT_EQ(d.corrupt->majority_hash, 5u);
  EXPECT_EQ(d.corrupt->host, "h1");
  EXPECT_NE(d.reason.find("member h3 (3) is corrupt: 2 of 3 voters agree on HashKV 5 at revision 900"), std::string::npos) << d.reason;
  EXPECT_EQ(d.command.rfind("etcdadm member remove h3 --endpoints https://10.0.0.1:2379", 0), 0u) << d.command;
  // Before NOSPACE, which waits for it.
  for (auto& m : o.cluster.info.members) m.errors = {"memberID:2 alarm:NOSPACE "};
  EXPECT_EQ(decide(o, "t").step, Step::kRemoveMember);

  // No majority: nothing is removed.
  o.hashes = hashes_of({5, 6, 7});
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("a person decides"), std::string::npos) << d.reason;
  EXPECT_NE(d.command.find("restore-backup"), std::string::npos) << d.command;

  // etcd's CORRUPT alarm, not compared yet: wait for the comparison; compared and all agreeing
  // with no member known corrupt: wait for a person; after a replacement: disarm.
  for (auto& m : o.cluster.info.members) m.errors = {"memberID:0 alarm:CORRUPT "};
  o.hashes.reset();
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("comparing the voters' HashKV"), std::string::npos) << d.reason;
  o.hashes = hashes_of({5, 5, 5});
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("no member was found corrupt and replaced in the last hour"), std::string::npos) << d.reason;
  o.maintenance.corrupt[9] = CorruptMember{o.now_unix - 30, "h1", 800, 6, 5};  // removed: not listed any more
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kDisarmCorrupt) << d.reason;
  EXPECT_EQ(d.members, std::vector<uint64_t>{0});
  // A replacement that already excused an alarm, or one more than an hour old, excuses no other.
  o.maintenance.corrupt[9].alarm_settled = true;
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  o.maintenance.corrupt[9].alarm_settled = false;
  o.maintenance.corrupt[9].unix = o.now_unix - kCorruptDisarmWindowSeconds - 1;
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  o.maintenance.corrupt[9].unix = o.now_unix - 30;
  // A minority under the alarm: replaced first.
  o.hashes = hashes_of({5, 6, 5});
  EXPECT_EQ(decide(o, "t").step, Step::kRemoveMember);
  // Two voters that differ: neither is a majority, nothing is removed.
  Observation two = acting({member(1, "h1"), member(2, "h2")});
  two.hashes = hashes_of({5, 6});
  EXPECT_EQ(decide(two, "t").step, Step::kWait) << "two voters: no majority either way";
}

// A voter etcd refused to start (its initial corruption check found its data differs from a
// peer's, without saying whose is damaged): replaced as corrupt once the other voters agree and are
// a majority, never when they disagree or too few are left; a host whose record is stale proves
// nothing. The refusing host starts it again only every 30 s. Both records carry it.
TEST(ControllerDecide, AMemberEtcdRefusedToStartIsReplacedAsCorruptOnlyWhenTheOthersAgree) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3", false)});
  o.hosts[2].record.member_id = 3;
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("unhealthy: h3 (3)"), std::string::npos) << "without the refusal: the grace; " << d.reason;
  o.hosts[2].record.etcd_refused = kEtcdRefusedInconsistent;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("comparing the other voters' HashKV first"), std::string::npos) << d.reason;
  o.hashes = hashes_of({5, 5});  // h1 and h2
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 3u);
  ASSERT_TRUE(d.corrupt);
  EXPECT_TRUE(d.corrupt->refused_to_start);
  EXPECT_EQ(d.corrupt->hash, 0u);
  EXPECT_EQ(d.corrupt->majority_hash, 5u);
  EXPECT_EQ(d.corrupt->revision, 900);
  EXPECT_NE(d.reason.find("etcd refused to start member h3 (3) on h3"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("every voter's HashKV at revision 900 is 5"), std::string::npos) << d.reason;
  o.hashes = hashes_of({5, 6});
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("the other voters do not agree either"), std::string::npos) << d.reason;
  o.hashes = hashes_of({5, 5});
  o.hosts[2].live = false;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("unhealthy: h3 (3)"), std::string::npos) << "a stale record: the grace; " << d.reason;
  // Two of three refusing: the one left is no majority.
  Observation two_down = acting({member(1, "h1"), member(2, "h2", false), member(3, "h3", false)});
  for (int i : {1, 2}) {
    two_down.hosts[i].record.member_id = static_cast<uint64_t>(i + 1);
    two_down.hosts[i].record.etcd_refused = kEtcdRefusedInconsistent;
  }
  two_down.hashes = hashes_of({5});
  d = decide(two_down, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("the 1 voters that agree are no majority of 3"), std::string::npos) << d.reason;

  // The refusing host: started again only every kRefusedRestartSeconds.
  Observation host3 = acting({member(1, "h1"), member(2, "h2"), member(3, "h3", false)});
  host3.local.etcd_running = false;
  host3.local.etcd_refused = kEtcdRefusedInconsistent;
  host3.local.seconds_since_start = 10;
  d = decide(host3, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("started again every 30 s"), std::string::npos) << d.reason;
  host3.local.seconds_since_start = kRefusedRestartSeconds;
  EXPECT_EQ(decide(host3, "t").step, Step::kStartLocalMember);
  host3.local.etcd_refused.clear();
  host3.local.seconds_since_start = 1;
  EXPECT_EQ(decide(host3, "t").step, Step::kStartLocalMember) << "a stop that was no refusal";

  // Removed so: its host sets the data aside as corrupt, saying how it was found.
  Observation gone = acting({member(2, "h2"), member(3, "h3")});
  gone.local.member_id = 1;
  gone.maintenance.corrupt[1] = CorruptMember{gone.now_unix, "h2", 900, 0, 5, true};
  d = decide(gone, "t");
  ASSERT_EQ(d.step, Step::kForgetMember) << d.reason;
  EXPECT_EQ(d.set_aside_as, "corrupt");
  EXPECT_NE(d.reason.find("etcd refused to start it on data that differs from its peers', which agreed on HashKV 5 at revision 900"),
            std::string::npos) << d.reason;

  // The records: round trips, and only known words.
  MaintenanceRecord m;
  m.corrupt[3] = CorruptMember{1800000000, "h1", 900, 0, 5, true};
  EXPECT_EQ(parse_maintenance_record(maintenance_record_json(m), "x").corrupt, m.corrupt);
  HostRecord h = host("h3").record;
  h.etcd_refused = kEtcdRefusedInconsistent;
  EXPECT_EQ(parse_host_record(host_record_json(h), "x"), h);
  auto hj = nlohmann::json::parse(host_record_json(h));
  hj["etcdRefused"] = "bored";
  EXPECT_THROW(parse_host_record(hj.dump(), "x"), Error);
  hj.erase("etcdRefused");
  EXPECT_EQ(parse_host_record(hj.dump(), "x").etcd_refused, "") << "absent: none (older hosts)";
}

// Certificates within the spec's window: renewed by their own host (acting or not), only with
// every member healthy; outside it, nothing.
TEST(ControllerDecide, CertificatesDueAreRenewedByTheirHostWithEveryMemberHealthy) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.local.certs_expire_unix = o.now_unix + 40 * 86400;
  o.local.first_expiring = "peer.crt";
  EXPECT_EQ(decide(o, "t").step, Step::kIdle) << "40 days left, a 30-day window";
  o.local.certs_expire_unix = o.now_unix + 3600;
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRenewCerts) << d.reason;
  EXPECT_NE(d.reason.find("peer.crt expires 2027-01-15T09:00:00Z, within the spec's 720 h"), std::string::npos) << d.reason;
  EXPECT_EQ(d.command.rfind("etcdadm certs renew all", 0), 0u) << d.command;
  // Not the acting host: the same (each host renews its own).
  Observation follower = o;
  follower.cluster.info.leader_id = 2;
  for (auto& m : follower.cluster.info.members) m.leader = m.id == 2;
  EXPECT_EQ(decide(follower, "t").step, Step::kRenewCerts);
  // A member down: wait.
  o.cluster.info.members[2].reachable = false;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("renewed once every member is healthy (h3 (3) is not)"), std::string::npos) << d.reason;
  o.cluster.info.members[2].reachable = true;
  o.auto_spec.cert_renew_before_seconds = 0;
  EXPECT_EQ(decide(o, "t").step, Step::kIdle) << "0: never";
}

// A CA rotation: each host re-issues its own leaves; a host switches only once every member's host
// re-issued and every member is healthy; the acting controller completes it once every one switched,
// and starts one when the CA expires within the spec's window.
TEST(ControllerDecide, ACaRotationReissuesEverywhereThenSwitchesThenCompletes) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  CaRotationRecord r;
  r.id = "20261202T100000Z";
  r.old_ca_sha256 = kCa;
  r.new_ca_sha256 = std::string(64, 'b');
  r.started_by = "root@h1";
  o.ca_rotation = r;
  o.ca_rotation_state = CaRotationState::kDue;
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kCaReissue) << d.reason;
  EXPECT_NE(d.reason.find("CA rotation 20261202T100000Z: re-issuing this host's certificates by the new CA"), std::string::npos) << d.reason;

  o.ca_rotation_state = CaRotationState::kReissued;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kIdle) << "h2 and h3 have not re-issued: no switch, nothing held back: " << d.reason;
  for (auto& h : o.hosts) {
    h.record.ca_rotation_id = r.id;
    h.record.ca_rotation_step = "reissued";
  }
  o.hosts[2].record.ca_rotation_id = "20251202T100000Z";  // an older rotation's step counts for nothing
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);
  o.hosts[2].record.ca_rotation_id = r.id;
  o.cluster.info.members[1].reachable = false;
  EXPECT_NE(decide(o, "t").step, Step::kCaSwitch) << "h2's member is down: no restart now";
  o.cluster.info.members[1].reachable = true;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kCaSwitch) << d.reason;
  EXPECT_NE(d.reason.find("restarts its etcd on it"), std::string::npos) << d.reason;
  o.ca_rotation_state = CaRotationState::kSwitchRestart;
  EXPECT_EQ(decide(o, "t").step, Step::kCaSwitch) << "a switch killed before its restart is finished";

  o.ca_rotation_state = CaRotationState::kSwitched;
  o.ca_sha256 = r.new_ca_sha256;
  EXPECT_EQ(decide(o, "t").step, Step::kIdle) << "h2 and h3 have not switched";
  for (auto& h : o.hosts) h.record.ca_rotation_step = "switched";
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kCompleteCaRotation) << d.reason;
  o.ca_rotation->completed_unix = o.now_unix;
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);

  // A record that does not open here: wait and say so.
  o.ca_rotation->completed_unix = 0;
  o.ca_rotation_state = CaRotationState::kDue;
  o.ca_rotation_problem = "the sealed text does not open with /pki/ca.key";
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("cannot be carried out here: the sealed text does not open"), std::string::npos) << d.reason;
  EXPECT_NE(d.command.find("delete etcdadm-auto/ca-rotation.json if nobody started it"), std::string::npos) << d.command;
  // A host of another CA takes no part.
  o.ca_rotation_problem.clear();
  o.ca_rotation_state = CaRotationState::kOtherCa;
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);
}

TEST(ControllerDecide, TheActingControllerStartsARotationWhenTheCaExpiresWithinTheWindow) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.local.ca_expires_unix = o.now_unix + 40 * 86400;
  EXPECT_EQ(decide(o, "t").step, Step::kIdle) << "40 days left, a 30-day window";
  o.local.ca_expires_unix = o.now_unix + 20 * 86400;
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kStartCaRotation) << d.reason;
  EXPECT_EQ(d.command, "etcdadm auto rotate-ca --store s3://b/c");
  o.hosts[1].record.ca_sha256 = std::string(64, 'c');
  EXPECT_EQ(decide(o, "t").step, Step::kIdle) << "a member's host holds another CA";
  o.hosts[1].record.ca_sha256 = kCa;
  o.cluster.info.members[2].reachable = false;
  EXPECT_NE(decide(o, "t").step, Step::kStartCaRotation) << "a member down";
  o.cluster.info.members[2].reachable = true;
  o.auto_spec.ca_rotate_before_seconds = 0;
  EXPECT_EQ(decide(o, "t").step, Step::kIdle) << "0: never";
  Observation follower = o;
  follower.auto_spec.ca_rotate_before_seconds = 30 * 86400;
  follower.cluster.info.leader_id = 2;
  for (auto& m : follower.cluster.info.members) m.leader = m.id == 2;
  EXPECT_EQ(decide(follower, "t").step, Step::kIdle) << "only the acting controller starts one";
}

// One host's certs dir through a rotation, each state as the files show it; the sealed CA opens with
// the old CA's key before and after the switch, and a record altered in any field does not.
TEST(ControllerCaRotation, AHostsCertsDirGoesDueReissuedSwitchedAndForgedRecordsDoNotOpen) {
  test::TempDir certs, config, other;
  ensure_ca(certs.path());
  MemberPkiSpec spec;
  spec.certs_dir = certs.path();
  spec.name = "h1";
  ensure_member_certs(spec);
  const CaRotationRecord r = new_ca_rotation(certs.path(), "root@h1", "test", 1800000000);
  EXPECT_EQ(r.id, "20270115T080000Z");
  EXPECT_EQ(local_ca_rotation_state(r, certs.path(), config.path()), CaRotationState::kDue);
  RotationCa ca = open_ca_rotation(r, certs.path());
  reissue_under_rotation_ca(certs.path(), ca);
  EXPECT_EQ(local_ca_rotation_state(r, certs.path(), config.path()), CaRotationState::kReissued);
  switch_to_rotation_ca(r, ca, certs.path(), config.path());
  EXPECT_EQ(local_ca_rotation_state(r, certs.path(), config.path()), CaRotationState::kSwitchRestart);
  EXPECT_EQ(open_ca_rotation(r, certs.path()).key_pem, ca.key_pem) << "opens with the retired key after the switch";
  finish_ca_switch(r, config.path());
  EXPECT_EQ(local_ca_rotation_state(r, certs.path(), config.path()), CaRotationState::kSwitched);

  ensure_ca(other.path());
  EXPECT_EQ(local_ca_rotation_state(r, other.path(), config.path()), CaRotationState::kOtherCa);
  EXPECT_THROW(open_ca_rotation(r, other.path()), Error);
  test::TempDir fresh;
  ensure_ca(fresh.path());
  const CaRotationRecord r2 = new_ca_rotation(fresh.path(), "root@h1", "test", 1800000000);
  auto kind_of = [&](const CaRotationRecord& forged) {
    try {
      open_ca_rotation(forged, fresh.path());
      return ErrorKind::kInternal;
    } catch (const Error& e) {
      return e.kind();
    }
  };
  CaRotationRecord forged = r2;
  forged.new_ca_sha256 = std::string(64, 'e');
  EXPECT_EQ(kind_of(forged), ErrorKind::kAuth) << "another new CA named";
  forged = r2;
  forged.id = "20270115T080001Z";
  EXPECT_EQ(kind_of(forged), ErrorKind::kAuth) << "another id";
  forged = r2;
  forged.sealed[10] = forged.sealed[10] == 'A' ? 'B' : 'A';
  EXPECT_EQ(kind_of(forged), ErrorKind::kAuth) << "the sealed text changed";
  forged = r2;
  forged.sealed = r.sealed;  // a real rotation of another CA
  EXPECT_EQ(kind_of(forged), ErrorKind::kAuth);
}

TEST(ControllerRecords, ACaRotationRecordRoundTripsAndRefusesHostileInput) {
  CaRotationRecord r;
  r.id = "20261202T100000Z";
  r.old_ca_sha256 = std::string(64, 'a');
  r.new_ca_sha256 = std::string(64, 'b');
  r.sealed = "c2VhbGVk";
  r.started_by = "root@h1";
  r.started_unix = 1800000000;
  r.reason = "the CA expires";
  EXPECT_EQ(parse_ca_rotation(ca_rotation_json(r), "x"), r);
  auto refused = [](nlohmann::json j) {
    try {
      parse_ca_rotation(j.dump(), "x");
      return false;
    } catch (const Error& e) {
      return e.kind() == ErrorKind::kCorrupt;
    }
  };
  const nlohmann::json good = nlohmann::json::parse(ca_rotation_json(r));
  for (const char* id : {"../../etc/x", "2026120210000Z", "20261202T10000aZ", ""}) {
    auto j = good;
    j["id"] = id;
    EXPECT_TRUE(refused(j)) << id;
  }
  auto j = good;
  j["newCaSha256"] = j["oldCaSha256"];
  EXPECT_TRUE(refused(j)) << "the same CA twice";
  j = good;
  j["oldCaSha256"] = "ABC";
  EXPECT_TRUE(refused(j));
  j = good;
  j["sealed"] = std::string(70000, 'A');
  EXPECT_TRUE(refused(j));
  j = good;
  j["format"] = "etcdadm-auto-ca-rotation/2";
  EXPECT_TRUE(refused(j));
  // Host records: the step is one of two words.
  HostRecord h = host("h1").record;
  h.ca_rotation_id = r.id;
  h.ca_rotation_step = "reissued";
  EXPECT_EQ(parse_host_record(host_record_json(h), "x"), h);
  auto hj = nlohmann::json::parse(host_record_json(h));
  hj["caRotationStep"] = "done";
  EXPECT_THROW(parse_host_record(hj.dump(), "x"), Error);
}

TEST(ControllerDecide, TheHostOfARemovedMemberSetsItsDataAsideAsCorruptOrRemoved) {
  Observation o = acting({member(2, "h2"), member(3, "h3")});
  o.local.member_id = 1;  // this host's member, no longer listed
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kForgetMember) << d.reason;
  EXPECT_EQ(d.set_aside_as, "removed") << "removed for another reason: the newest such data kept";
  o.maintenance.corrupt[1] = CorruptMember{o.now_unix, "h2", 900, 6, 5};
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kForgetMember);
  EXPECT_EQ(d.set_aside_as, "corrupt");
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
  EXPECT_EQ(d.set_aside_as, "removed");
  // The same learner as this host's own member (its ID recorded at the join): started, not forgotten.
  readded.cluster.info.members.back().id = 1;
  EXPECT_EQ(decide(readded, "t").step, Step::kStartLocalMember);
  // A member ID never seen (0): the peer URL alone decides, as before.
  readded.cluster.info.members.back().id = 9;
  readded.local.member_id = 0;
  EXPECT_NE(decide(readded, "t").step, Step::kForgetMember);
}

TEST(ControllerRecords, MaintenanceRecordAndSpecAdditionsRoundTripAndRefuseHostileInput) {
  MaintenanceRecord r;
  r.sequence = 9;
  r.defrags[0x8e9e05c52164694dULL] = MemberDefrag{1800000000, 52428800, 40960, 27};
  r.last_space_recovery = SpaceRecoveryRecord{1800000100, "h1", 1000, 5000, 4000, 2 * kMiB, 30 * kMiB, 24 * kMiB, true, "n"};
  r.in_progress = MaintenanceLease{"defrag", "h2", 1800000200};
  r.corrupt[0x2f2af311a04f72b2ULL] = CorruptMember{1800000300, "h1", 900, 4294967295u, 12, true};
  const std::string j = maintenance_record_json(r);
  EXPECT_NE(j.find("\"8e9e05c52164694d\""), std::string::npos) << j;
  EXPECT_EQ(parse_maintenance_record(j, "m"), r);
  EXPECT_EQ(parse_maintenance_record(R"({"format":"etcdadm-auto-maintenance/1"})", "m"), MaintenanceRecord{});
  auto corrupt = [](const std::string& text, const std::string& expected) {
    try {
      parse_maintenance_record(text, "m");
      ADD_FAILURE() << "expected kCorrupt: " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","defrags":{"zz":{"unix":1}}})", "defrags.zz is no member ID");
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","defrags":[]})", "\"defrags\" is not an object");
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","inProgress":{"step":"defrag","host":"../x","sinceUnix":1}})",
          "no usable member name");
  corrupt(R"({"format":"etcdadm-auto-maintenance/2"})", "not \"etcdadm-auto-maintenance/1\"");
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","corrupt":{"0":{"unix":1}}})", "corrupt.0 is no member ID");
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","corrupt":{"2f":{"unix":1,"hash":4294967296}}})", "not an integer in range");
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","corrupt":[]})", "\"corrupt\" is not an object");

  AutoSpec s;
  s.defrag_free_percent = 30;
  s.defrag_min_free_bytes = 1;
  s.defrag_schedule = "0 3 * * SUN";
  s.nospace_keep_revisions = 5;
  s.corrupt_check_seconds = 0;
  s.auto_restore = true;
  s.auto_restore_delay_seconds = 90;
  s.cert_renew_before_seconds = 0;
  s.ca_warn_before_seconds = 86400;
  EXPECT_EQ(parse_auto_spec(auto_spec_json(s), "spec"), s);
  EXPECT_FALSE(parse_auto_spec(R"({"format":"etcdadm-auto-spec/1"})", "spec").auto_restore) << "off unless turned on";
  EXPECT_EQ(parse_auto_spec(R"({"format":"etcdadm-auto-spec/1"})", "spec").corrupt_check_seconds, 300) << "absent: the default";
  try {
    parse_auto_spec(R"({"format":"etcdadm-auto-spec/1","corruptCheckSeconds":604801})", "spec");
    ADD_FAILURE() << "a corrupt check interval over a week accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("corruptCheckSeconds"), std::string::npos) << e.what();
  }
  // A spec written before the additions: the defaults.
  EXPECT_EQ(parse_auto_spec(R"({"format":"etcdadm-auto-spec/1","replaceAfterSeconds":600})", "spec"), AutoSpec{});
  try {
    parse_auto_spec(R"({"format":"etcdadm-auto-spec/1","defragSchedule":"every now and then"})", "spec");
    ADD_FAILURE() << "a schedule that does not parse";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
  }
}

}  // namespace
}  // namespace etcdadm

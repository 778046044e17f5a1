// Creating a cluster (controller/decide_creation.cc): one plan by a quorum of live hosts, each
// planned host creating its member, never a plan over data a host holds.
#include <gtest/gtest.h>

#include "controller/decide.h"
#include "test/support/controller_observations.h"

namespace etcdadm {
namespace {

using namespace decide_test;

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
  o.hosts[1].record.data = DataState::kMember;
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

TEST(ControllerDecide, NoMarkerButDataSomewhereIsNeverPlannedOver) {
  Observation o = fresh(3);
  o.hosts[1].record.data = DataState::kMember;
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("hosts hold member data (h2 (member))"), std::string::npos) << d.reason;
}

// Rule O: a member made by hand (no plan in the store, no created marker) is left alone, even
// stopped, until `etcdadm auto adopt` writes the plan that names its cluster; a controller marks an
// adopted cluster created only while its own member belongs to it.
TEST(ControllerDecide, AHandMadeMemberWaitsForAdoptionUntouchedAndOnlyItsAdoptedClusterIsMarked) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.created_marker = false;
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("this host's member (cluster 4d) was made without this store's controllers and is not adopted"),
            std::string::npos) << d.reason;
  EXPECT_NE(d.command.find("etcdadm auto adopt --store s3://b/c"), std::string::npos) << d.command;
  EXPECT_TRUE(d.waits_on_a_person);
  auto without_spec = o;  // adopt writes the spec: no host asks for a seed of its own
  without_spec.spec.reset();
  EXPECT_NE(decide(without_spec, "t").command.find("etcdadm auto adopt"), std::string::npos);
  o.local.etcd_running = false;  // stopped by its owner: not started again
  o.local.has_leader = false;
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  o.restore_command = EtcdManagerCommand{};  // nor restored over by a queued restore
  o.restore_command->key = "control/2027-01-15T08:00:00Z-000000/_command.json";
  o.restore_command->restore_backup = EtcdManagerRestoreCommand{{0, ""}, "b1"};
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  o.restore_command.reset();
  o.local.plan_sequence = 1;  // made from plan 1 of these controllers, the plan since deleted
  o.local.etcd_running = true;
  o.local.has_leader = true;
  EXPECT_EQ(decide(o, "t").step, Step::kMarkCreated);
  o.local.plan_sequence = 0;
  o.local.has_leader = true;
  o.plan = plan_of({"h1", "h2", "h3"});
  o.plan->purpose = "adopt";
  o.plan->adopts_cluster_id = 78;  // another cluster's adoption
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("plan 1 adopts cluster 4e, but this host's member belongs to cluster 4d"), std::string::npos)
      << d.reason;
  o.plan->adopts_cluster_id = 77;
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kMarkCreated) << d.reason;
  EXPECT_NE(d.reason.find("the adopted cluster has a leader"), std::string::npos) << d.reason;
  o.created_marker = true;  // adopted: acted on like any created cluster
  EXPECT_EQ(decide(o, "t").step, Step::kIdle);
  o.local.etcd_running = false;
  o.local.has_leader = false;
  EXPECT_EQ(decide(o, "t").step, Step::kStartLocalMember);
}

}  // namespace
}  // namespace etcdadm

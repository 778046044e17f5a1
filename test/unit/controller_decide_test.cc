// decide()'s rule order (controller/decide.cc): what comes before everything else, and the local
// steps in their order. Each concern's rules: controller_decide_<concern>_test.cc.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "controller/decide.h"
#include "test/support/controller_observations.h"

namespace etcdadm {
namespace {

using namespace decide_test;

TEST(ControllerDecide, PauseAndMissingSpecComeFirst) {
  Observation o = fresh(3);
  o.pause = PauseRecord{"ops@bastion", "disk swap", 0};
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_EQ(d.reason, "paused by ops@bastion (disk swap): no controller acts");
  EXPECT_EQ(d.command, "etcdadm auto resume --store s3://b/c");
  EXPECT_TRUE(d.waits_on_a_person) << "a paused host reads the store every idle interval, not every round";
  o.pause.reset();
  o.spec.reset();
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_EQ(d.command, "etcdadm seed --store s3://b/c --members 3 --version <etcd version>");
}

// Found in a trial: {"memberCount": 0} made the acting controller remove two healthy members.
// A spec the controllers cannot obey, or any shared record they cannot read, stops everything but
// this host's own member (rule Q), and the wait names it.
TEST(ControllerDecide, ASpecOrRecordItCannotObeyStopsAllButTheLocalMember) {
  for (const auto& [spec, named] : std::vector<std::pair<EtcdManagerClusterSpec, std::string>>{
           {{0, "3.5.17"}, "memberCount 0 is outside 1-9"},
           {{-1, "3.5.17"}, "memberCount -1 is outside 1-9"},
           {{50, "3.5.17"}, "memberCount 50 is outside 1-9"},
           {{3, "3.5"}, "etcdVersion \"3.5\" is no etcd release"},
           {{3, "latest"}, "etcdVersion \"latest\" is no etcd release"}}) {
    Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
    o.spec = spec;
    Decision d = decide(o, "t");
    ASSERT_EQ(d.step, Step::kWait) << spec.member_count << " " << spec.etcd_version << ": " << d.reason;
    EXPECT_NE(d.reason.find("control/etcd-cluster-spec: " + named), std::string::npos) << d.reason;
    // This host's own member is still started when it is down.
    o.local.etcd_running = false;
    EXPECT_EQ(decide(o, "t").step, Step::kStartLocalMember);
  }
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.record_problems = {"etcdadm-auto/plan.json: s3://b/c/etcdadm-auto/plan.json is not JSON"};
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("etcdadm-auto/plan.json is not JSON"), std::string::npos) << d.reason;
  EXPECT_NE(d.command.find("etcdadm auto status --store s3://b/c"), std::string::npos) << d.command;
  EXPECT_TRUE(d.waits_on_a_person);
  // A readable pause still comes first; an unreadable spec is never "no spec".
  o.pause = PauseRecord{"ops@bastion", "", 0};
  EXPECT_NE(decide(o, "t").reason.find("paused by ops@bastion"), std::string::npos);
  o.pause.reset();
  o.spec.reset();
  EXPECT_NE(decide(o, "t").reason.find("plan.json is not JSON"), std::string::npos);
}

// A second host started under a name a live host holds does nothing at all, paused or not.
TEST(ControllerDecide, ANameAnotherLiveHostHoldsComesBeforeEverything) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.local.etcd_running = false;
  o.pause = PauseRecord{"ops@bastion", "", 0};
  o.name_conflict = "another host runs as h1 (host ID 0123...)";
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_EQ(d.reason, o.name_conflict);
  EXPECT_EQ(d.command, "give this host its own --name, or stop the other etcdadm auto that runs as h1");
}

// A spec that lowers the failures the cluster survives is carried out and said, step by step.
TEST(ControllerDecide, AResizeThatLowersFaultToleranceSaysSo) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.spec->member_count = 2;
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_NE(d.reason.find("the spec lowers the cluster's fault tolerance from 1 to 0 failed members"),
            std::string::npos)
      << d.reason;
  EXPECT_NE(d.reason.find("an even size (2) survives no more failures than 1 members"), std::string::npos) << d.reason;
  o.spec->member_count = 3;
  EXPECT_EQ(decide(o, "t").reason.find("fault tolerance"), std::string::npos);
}

TEST(ControllerDecide, LocalStepsAndTheMarker) {
  Observation o = fresh(3);
  o.plan = plan_of({"h1", "h2", "h3"});
  o.local.data = DataState::kMember;
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
  o.local.data = DataState::kLost;
  o.local.etcd_running = false;
  o.hosts[1].record.data = DataState::kMember;
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_EQ(d.command.rfind("etcdadm join --replace h1", 0), 0u) << d.command;
}

}  // namespace
}  // namespace etcdadm

// decide()'s rule order (controller/decide.cc): what comes before everything else, and the local
// steps in their order. Each concern's rules: controller_decide_<concern>_test.cc.
#include <gtest/gtest.h>

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
  o.pause.reset();
  o.spec.reset();
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_EQ(d.command, "etcdadm seed --store s3://b/c --members 3 --version <etcd version>");
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

// Tests of etcdadm/maintenance/defrag.{h,cc}: plan_defrag, which members a defrag touches and in
// which order, from what cluster_info saw (and the alarms, etcdadm/maintenance/alarms.h, that stop
// it).
#include "etcdadm/maintenance/defrag.h"

#include <gtest/gtest.h>

#include "etcdadm/maintenance/alarms.h"

namespace etcdadm {
namespace {

MemberInfo member(uint64_t id, const std::string& name, int64_t size, int64_t in_use, bool leader = false) {
  MemberInfo m;
  m.id = id;
  m.name = name;
  m.client_urls = {"https://10.0.0." + std::to_string(id) + ":2379"};
  m.reachable = true;
  m.leader = leader;
  m.db_size = size;
  m.db_size_in_use = in_use;
  return m;
}

std::vector<std::string> order(const DefragPlan& p) {
  std::vector<std::string> out;
  for (const auto& e : p.members) out.push_back(e.member.name + (e.due ? "" : "-"));
  return out;
}

constexpr int64_t MiB = 1 << 20;

ClusterInfo three(int64_t free_c = 900 * MiB) {
  ClusterInfo info;
  info.leader_id = 1;
  info.members = {member(1, "a", 1000 * MiB, 100 * MiB, true), member(3, "c", 1000 * MiB, 1000 * MiB - free_c),
                  member(2, "b", 1000 * MiB, 400 * MiB)};
  return info;
}

TEST(DefragPlan, LearnersThenFollowersByNameThenTheLeader) {
  ClusterInfo info = three();
  MemberInfo l = member(9, "z-learner", 100 * MiB, 10 * MiB);
  l.learner = true;
  info.members.push_back(l);
  auto p = plan_defrag(info, {}, DefragRule{});
  EXPECT_TRUE(p.problems.empty());
  EXPECT_EQ(order(p), (std::vector<std::string>{"z-learner", "b", "c", "a"}));
}

TEST(DefragPlan, TheRuleNeedsBothTheShareAndTheBytes) {
  // a: 90% (900 MiB) free, b: 60% (600 MiB), c: 30% (300 MiB)
  auto p = plan_defrag(three(300 * MiB), {}, DefragRule{0.5, 500 * MiB});
  EXPECT_EQ(order(p), (std::vector<std::string>{"b", "c-", "a"}));
  EXPECT_EQ(p.members[1].why, "300.0 MiB of 1000.0 MiB free (30%): under the threshold (50% and 500.0 MiB)");
  EXPECT_EQ(p.members[0].why, "600.0 MiB of 1000.0 MiB free (60%)");
  auto bytes = plan_defrag(three(300 * MiB), {}, DefragRule{0.25, 700 * MiB});
  EXPECT_EQ(order(bytes), (std::vector<std::string>{"b-", "c-", "a"}));
  EXPECT_TRUE(bytes.any_due());
  auto none = plan_defrag(three(300 * MiB), {}, DefragRule{0.95, 0});
  EXPECT_FALSE(none.any_due());
}

TEST(DefragPlan, OnlyTheMembersAskedForByNameOrId) {
  auto p = plan_defrag(three(), {}, DefragRule{}, {"c", "1"});
  EXPECT_EQ(order(p), (std::vector<std::string>{"b-", "c", "a"}));
  EXPECT_EQ(p.members[0].why, "not asked for");
  auto unknown = plan_defrag(three(), {}, DefragRule{}, {"nope"});
  ASSERT_EQ(unknown.problems.size(), 1u);
  EXPECT_EQ(unknown.problems[0], "no member is named nope (etcdadm info lists them)");
}

TEST(DefragPlan, AMemberDownOrWithoutLeaderOrACorruptAlarmStopsEverything) {
  ClusterInfo info = three();
  info.members[1].reachable = false;
  info.members[1].status_error = "connection refused";
  info.members[2].errors = {"etcdserver: no leader"};
  auto p = plan_defrag(info, {{1, "NOSPACE"}, {3, "CORRUPT"}}, DefragRule{});
  EXPECT_EQ(p.problems, (std::vector<std::string>{
                            "member c (3) does not answer (connection refused)", "member b (2) sees no leader",
                            "etcd raised CORRUPT on member 3: a corrupt member is replaced, not defragmented"}));
  // NOSPACE alone is no reason to wait: a defrag is part of its remedy.
  auto nospace = plan_defrag(three(), {{1, "NOSPACE"}}, DefragRule{});
  EXPECT_TRUE(nospace.problems.empty());
}

TEST(DefragPlan, AlarmsText) {
  EXPECT_EQ(alarms_text({{0x8e9e05c52164694dULL, "NOSPACE"}, {2, "CORRUPT"}}), "NOSPACE on 8e9e05c52164694d, CORRUPT on 2");
}

}  // namespace
}  // namespace etcdadm

namespace etcdadm {
namespace {

TEST(DefragPlan, AlarmsAsStatusListsThem) {
  ClusterInfo info = three();
  info.members[0].errors = {"memberID:10276657743932975437 alarm:NOSPACE "};
  info.members[1].errors = {"etcdserver: no leader", "memberID:10276657743932975437 alarm:NOSPACE ",
                            "memberID:2 alarm:CORRUPT"};
  EXPECT_EQ(alarms_in_status(info),
            (std::vector<MemberAlarm>{{10276657743932975437ULL, "NOSPACE"}, {2, "CORRUPT"}}));
}

}  // namespace
}  // namespace etcdadm

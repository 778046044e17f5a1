// `etcdadm auto adopt`'s checks (controller/adopt.h): a running cluster is handed to the
// controllers only while it is healthy and every member runs beside a live controller of the store
// holding the cluster's CA; every reason is named at once.
#include <gtest/gtest.h>

#include "controller/adopt.h"
#include "test/support/controller_observations.h"

namespace etcdadm {
namespace {

using namespace decide_test;

constexpr int64_t kNow = 1800000000;

// The hosts h1..h3 of members 1..3, each running its member, written 5 s ago.
std::vector<HostRecord> member_hosts() {
  std::vector<HostRecord> out;
  for (uint64_t id = 1; id <= 3; ++id) {
    HostRecord r = host("h" + std::to_string(id), true, DataState::kMember).record;
    r.member_id = id;
    r.etcd_running = true;
    r.heartbeat_unix = kNow - 5;
    out.push_back(r);
  }
  return out;
}

std::string all(const std::vector<std::string>& why) {
  std::string out;
  for (const auto& w : why) out += w + "\n";
  return out;
}

TEST(ControllerAdopt, AHealthyClusterWithEveryMembersHostLiveIsAdoptableAndEveryReasonAgainstItIsNamed) {
  ClusterInfo healthy = cluster_of({member(1, "h1"), member(2, "h2"), member(3, "h3")}, 2).info;
  auto hosts = member_hosts();
  HostRecord spare = host("h4").record;  // a spare with the cluster's CA does not matter
  spare.heartbeat_unix = kNow;
  hosts.push_back(spare);
  EXPECT_EQ(all(adoption_refusals(healthy, hosts, kCa, kNow, std::chrono::seconds(90))), "");

  ClusterInfo c = healthy;
  c.leader_id = 0;
  c.members[0].reachable = false;
  c.members[0].status_error = "connection refused";
  c.members[1].errors = {"memberID:2 alarm:NOSPACE"};
  c.members[2].version = "3.6.5";
  c.members.push_back(member(4, "", false));
  c.members.push_back(member(5, "h5", true, true));
  auto stale = member_hosts();
  stale[1].heartbeat_unix = kNow - 200;
  stale[2].peer_url = "https://10.0.0.9:2380";
  stale[2].etcd_running = false;
  HostRecord other_ca = host("h6").record;
  other_ca.ca_sha256 = "cb" + std::string(62, '0');
  stale.push_back(other_ca);
  const std::string why = all(adoption_refusals(c, stale, kCa, kNow, std::chrono::seconds(90)));
  for (const char* expected : {
           "no member names a leader: the cluster is not healthy\n",
           "member h1 (1) does not answer: connection refused\n",
           "member h2 (2) reports: memberID:2 alarm:NOSPACE\n",
           "host h2's record was last written 200 s ago by this host's clock: its etcdadm auto does not answer",
           "host h3 records member 3 at https://10.0.0.9:2380, but the member's peer URLs are https://10.0.0.3:2380",
           "host h3 does not report its member running (member, etcd not running)\n",
           "member 4 was added but never started",
           "member h5 (5) is a learner: a join is under way",
           "the members run different etcd versions (3.5.17, 3.6.5): a version change is under way",
           "host h6 holds another CA (cb0000000000..., the cluster's is ca0000000000...): the CA on the hosts differs",
       }) {
    EXPECT_NE(why.find(expected), std::string::npos) << expected << "\nin:\n" << why;
  }

  auto missing = member_hosts();
  missing.pop_back();
  EXPECT_EQ(all(adoption_refusals(healthy, missing, kCa, kNow, std::chrono::seconds(90))),
            "member h3 (3) has no host running etcdadm auto on this store: start it on the member's host with the "
            "member's own flags (its --name, --data-dir, URLs and --certs-dir)\n");
}

}  // namespace
}  // namespace etcdadm

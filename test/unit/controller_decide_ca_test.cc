// Certificates and the CA (controller/decide_ca.cc): renewals and a CA rotation's steps.
#include <gtest/gtest.h>

#include "controller/decide.h"
#include "test/support/controller_observations.h"

namespace etcdadm {
namespace {

using namespace decide_test;

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

// Rotation 20261202T100000Z from kCa to "bb...b", every host's leaves re-issued by it, this host's too.
CaRotationRecord reissued_everywhere(Observation& o) {
  CaRotationRecord r;
  r.id = "20261202T100000Z";
  r.old_ca_sha256 = kCa;
  r.new_ca_sha256 = std::string(64, 'b');
  o.ca_rotation = r;
  o.ca_rotation_state = CaRotationState::kReissued;
  for (auto& h : o.hosts) {
    h.record.ca_rotation_id = r.id;
    h.record.ca_rotation_step = "reissued";
  }
  return r;
}

// Found in review: the switch restarted a member with no quorum check, beside a version change on
// another host, and restarted 1- and 2-member clusters on its own.
TEST(ControllerDecide, ACaSwitchRestartsOnlyWhereTheOthersKeepQuorumAndNeverBesideAVersionChange) {
  // Two members: the other cannot keep quorum alone. Waits for a person, unless the spec allows it.
  Observation o = acting({member(1, "h1"), member(2, "h2")}, 2);
  o.spec->member_count = 2;
  reissued_everywhere(o);
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("cannot keep quorum meanwhile"), std::string::npos) << d.reason;
  EXPECT_EQ(d.command, "etcdadm seed --store s3://b/c --restart-without-quorum on (the switches then go one host at a time)");
  o.auto_spec.restart_without_quorum = true;
  EXPECT_EQ(decide(o, "t").step, Step::kCaSwitch);
  // One member: the same.
  o = acting({member(1, "h1")}, 1);
  o.spec->member_count = 1;
  reissued_everywhere(o);
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  o.auto_spec.restart_without_quorum = true;
  EXPECT_EQ(decide(o, "t").step, Step::kCaSwitch);
  // Three members, one of them on another version (a change under way): the switch waits, and so
  // does the next version turn while the rotation is not completed.
  o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  reissued_everywhere(o);
  EXPECT_EQ(decide(o, "t").step, Step::kCaSwitch);
  o.cluster.info.members[2].version = "3.4.23";
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("waits for the version change under way"), std::string::npos) << d.reason;
  o.ca_rotation_state = CaRotationState::kSwitched;
  o.ca_sha256 = std::string(64, 'b');
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kWait) << d.reason;
  EXPECT_NE(d.reason.find("the version change waits until CA rotation 20261202T100000Z is completed"),
            std::string::npos)
      << d.reason;
}

// Found by Systemd.TheShippedAutoAndSidecarUnits...: a corrupt member replaced during a rotation. Its
// host, a spare now, switched to the new CA (no etcd to restart) while the two members left could
// not restart one at a time without losing quorum, and the acting controller added no spare of
// another CA: neither could go on. The spare of the rotation's new CA is added (every member's
// host re-issued by it), and the members' switches wait for it rather than for a person.
TEST(ControllerDecide, ASpareThatSwitchedDuringARotationJoinsAClusterOneMemberShort) {
  Observation o = acting({member(1, "h1"), member(2, "h2")}, 3);
  const CaRotationRecord r = reissued_everywhere(o);
  HostRecord& spare = o.hosts[2].record;
  spare.data = DataState::kEmpty;
  spare.ca_sha256 = r.new_ca_sha256;
  spare.ca_rotation_step = "switched";
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kAddMember) << d.reason;
  EXPECT_NE(d.reason.find("adding h3 as a learner"), std::string::npos) << d.reason;
  // Not before every member's host re-issued by the new CA (the spare would not verify them).
  o.hosts[1].record.ca_rotation_step = "";
  EXPECT_NE(decide(o, "t").step, Step::kAddMember);
  o.hosts[1].record.ca_rotation_step = "reissued";
  // Another CA than the rotation's two: never.
  spare.ca_sha256 = std::string(64, 'c');
  EXPECT_NE(decide(o, "t").step, Step::kAddMember);
  // A rotation completed: the new CA is every member's, or the spare is a stranger's.
  spare.ca_sha256 = r.new_ca_sha256;
  o.ca_rotation->completed_unix = o.now_unix;
  EXPECT_NE(decide(o, "t").step, Step::kAddMember);
}

TEST(ControllerDecide, TheActingControllerStartsARotationWhenTheCaExpiresWithinTheWindow) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.local.ca_expires_unix = o.now_unix + 400 * 86400;
  EXPECT_EQ(decide(o, "t").step, Step::kIdle) << "400 days left, the default window of a year";
  o.local.ca_expires_unix = o.now_unix + 300 * 86400;
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
  follower.auto_spec.ca_rotate_before_seconds = 365 * 86400;
  follower.cluster.info.leader_id = 2;
  for (auto& m : follower.cluster.info.members) m.leader = m.id == 2;
  EXPECT_EQ(decide(follower, "t").step, Step::kIdle) << "only the acting controller starts one";
}

}  // namespace
}  // namespace etcdadm

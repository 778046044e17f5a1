// A host's part of a CA rotation (controller/ca_rotation.h): its certs dir goes due, re-issued,
// switched; a forged rotation record does not open.
#include <gtest/gtest.h>

#include "common/error.h"
#include "common/fs.h"
#include "controller/ca_rotation.h"
#include "etcdadm/pki.h"
#include "test/support/controller_observations.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

using namespace decide_test;

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

}  // namespace
}  // namespace etcdadm

// The cluster CA's rotation as one host carries it out (CaRotationRecord in controller/records.h is
// the record the hosts share; docs/self-management.md "CA rotation" the protocol; docs/operations.md
// "Rotating the cluster CA" the runbook). The steps are file changes in the member's certs dir,
// each idempotent, so a controller killed anywhere finishes on its next round:
//   reissue  the leaves issued by the new CA, each file the leaf then the cross certificate
//   switch   the new CA becomes ca.crt/key (the old kept as ca.retired-<id>.*), then etcd restarts
//            on it: <config-dir>/ca-rotation-<id>.restart marks a switch whose restart is still due
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "controller/records.h"
#include "etcdadm/member_config.h"
#include "etcdadm/pki.h"
#include "store/blob_store.h"

namespace etcdadm {

// SHA-256 (hex) of the CA certificate file: the identity of the cluster's CA in host records, plans
// and rotations.
std::string ca_fingerprint(const std::string& ca_cert_path);

// A new rotation of the CA in `certs_dir` (ca.crt/key): its CA made and sealed for the CA's holders.
CaRotationRecord new_ca_rotation(const std::string& certs_dir, const std::string& started_by, const std::string& reason,
                                 int64_t now_unix);

// The rotation record; nullopt when there is none. kCorrupt for one that does not parse.
std::optional<CaRotationRecord> read_ca_rotation(BlobStore& store);
// Writes a new rotation create-if-absent, or over a completed one (a conditional write against the
// version read). Returns nullopt when written, else the rotation under way that prevented it.
std::optional<CaRotationRecord> write_new_ca_rotation(BlobStore& store, const CaRotationRecord& rotation);
// Marks it completed (a conditional write over the record as read; false when it changed meanwhile).
bool complete_ca_rotation(BlobStore& store, const CaRotationRecord& rotation, int64_t now_unix);

// Where this host's certs dir stands in a rotation.
enum class CaRotationState {
  kOtherCa,        // its ca.crt is neither the rotation's old nor its new CA
  kDue,            // the old CA, leaves not (all) issued by the new one yet
  kReissued,       // the old CA, every leaf issued by the new one
  kSwitchRestart,  // the new CA (or the switch started), etcd still to restart on it
  kSwitched,       // the new CA, restarted
};
// What a host record says of a state (HostRecord::ca_rotation_step): "reissued" (kReissued, and
// kSwitchRestart: the switch is not done until etcd restarted), "switched", or "" (no part yet).
std::string ca_rotation_step(CaRotationState state);
CaRotationState local_ca_rotation_state(const CaRotationRecord& rotation, const std::string& certs_dir,
                                        const std::string& config_dir);

// The rotation's CA, opened with the old CA's key as this host holds it (ca.key before the switch,
// ca.retired-<id>.key after) and checked against the old CA (check_rotation_ca). kAuth when it does
// not open (sealed for another CA, forged, damaged), kCorrupt when what it holds does not fit,
// kNotFound when this host holds neither CA.
RotationCa open_ca_rotation(const CaRotationRecord& rotation, const std::string& certs_dir);

// The switch's file steps (the restart marker first, then adopt_rotation_ca); the caller restarts
// etcd and then calls finish_ca_switch, which removes the marker.
void switch_to_rotation_ca(const CaRotationRecord& rotation, const RotationCa& ca, const std::string& certs_dir,
                           const std::string& config_dir);
void finish_ca_switch(const CaRotationRecord& rotation, const std::string& config_dir);

// The client CAs a switched member trusts: `<certs>/clients-ca.crt` (MemberConfig::clients_ca_cert), the new CA then
// the retired one, set as the member's ETCD_TRUSTED_CA_FILE (read at its restart; its peers keep trusting the new CA
// alone, every peer certificate being re-issued). A client certificate the old CA issued that no host re-issues (a
// kube-apiserver's copy of apiserver-etcd-client outside the certs dir, a backup job's) is accepted until the old CA
// expires, as the members' chains (the cross certificate) verify for clients that trust only the old CA until then.
// Idempotent.
void trust_retired_ca_for_clients(const CaRotationRecord& rotation, const MemberConfig& member);

}  // namespace etcdadm

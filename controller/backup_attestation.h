// Backup attestations (docs/store-format.md §4.4c): a signed statement, beside a backup that a
// controller or its sidecar took, that this backup (its name, cluster ID, revision and db SHA-256)
// is the cluster's own. Anyone who can write to the store can write a backup; only a holder of the
// cluster CA's key can attest one. An auto-restore, which no person approves, restores attested
// backups only (docs/security.md, "What a store writer can make `etcdadm auto` do").
#pragma once

#include <string>

#include "controller/record_auth.h"
#include "store/blob_store.h"
#include "store/layout.h"

namespace etcdadm {

inline constexpr const char* kBackupAttestationFile = "etcdadm-attestation.json";
inline constexpr const char* kBackupAttestationFormat = "etcdadm-backup-attestation/1";

// NAME/etcdadm-attestation.json
std::string backup_attestation_key(const std::string& backup_name);

// What an attestation states: the backup as its writer saved it.
struct BackupAttestation {
  std::string backup;
  std::string cluster_id;
  int64_t revision = 0;
  std::string db_sha256;
  std::string attested_by;  // the host that signed it (for people; not checked)
};
BackupAttestation attestation_of(const BackupMeta& saved, const std::string& host);

// Signs and writes the attestation (overwriting: a backup is attested by whoever took it, and the
// same statement again changes nothing). kInternal without a CA key to sign with.
void write_backup_attestation(BlobStore& store, const BackupAttestation& attestation, const RecordKeyring& keyring);

// "" when `backup` may be restored without a person's approval: its attestation is authentic and
// names exactly this backup (name, cluster ID, revision, db SHA-256); or, under `policy`'s
// accept_unsigned, when it has none (a store from before attestations). Otherwise why not, one
// sentence naming the backup. Store errors other than a missing attestation propagate.
std::string backup_attestation_refusal(BlobStore& store, const BackupRecord& backup, const RecordPolicy& policy);

}  // namespace etcdadm

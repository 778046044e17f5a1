#include "controller/backup_attestation.h"

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace etcdadm {

std::string backup_attestation_key(const std::string& backup_name) {
  return backup_name + "/" + kBackupAttestationFile;
}

BackupAttestation attestation_of(const BackupMeta& saved, const std::string& host) {
  if (!saved.revision || saved.cluster_id.empty() || saved.db_sha256.empty()) {
    throw Error(ErrorKind::kInternal,
                "backup " + saved.name + " records no revision, cluster ID or db SHA-256 to attest");
  }
  return {saved.name, saved.cluster_id, *saved.revision, saved.db_sha256, host};
}

void write_backup_attestation(BlobStore& store, const BackupAttestation& a, const RecordKeyring& keyring) {
  const nlohmann::json j = {{"format", kBackupAttestationFormat},
                            {"backup", a.backup},
                            {"clusterId", a.cluster_id},
                            {"revision", a.revision},
                            {"dbSha256", a.db_sha256},
                            {"attestedBy", a.attested_by}};
  const std::string key = backup_attestation_key(a.backup);
  store.write_small(key, keyring.sign(key, j.dump()), /*overwrite=*/true);
}

std::string backup_attestation_refusal(BlobStore& store, const BackupRecord& backup, const RecordPolicy& policy) {
  const std::string key = backup_attestation_key(backup.name);
  std::string text;
  try {
    text = store.read_small(key, 64 << 10);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kNotFound) throw;
    if (policy.accept_unsigned) return "";
    return "backup " + backup.name + " is not attested (no " + kBackupAttestationFile +
           ": taken by a person, another tool or an etcdadm before attestations, or written by someone without the "
           "cluster's CA key)";
  }
  if (std::string why = policy.refusal(key, text); !why.empty()) return "backup " + backup.name + ": " + why;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto field = [&](const char* name) {
    return j.contains(name) && j[name].is_string() ? j[name].get<std::string>() : "";
  };
  const bool names_it = j.is_object() && field("format") == kBackupAttestationFormat &&
                        field("backup") == backup.name && field("clusterId") == backup.cluster_id &&
                        field("dbSha256") == backup.db_sha256 && !backup.db_sha256.empty() && j.contains("revision") &&
                        j["revision"].is_number_integer() && backup.revision &&
                        j["revision"].get<int64_t>() == *backup.revision;
  if (!names_it) {
    return "backup " + backup.name + "'s attestation names another backup, cluster, revision or db SHA-256 than its " +
           "metadata records (the backup was replaced after it was attested)";
  }
  return "";
}

}  // namespace etcdadm

#include "render/backup_record.h"

#include "render/json.h"

namespace etcdadm::render {

nlohmann::json backup_record_json(const BackupRecord& r) {
  nlohmann::json j = {
      {"backup", r.name},
      {"takenAt", time_json(r.taken_at_micros)},
      {"format", r.format},
      {"source", r.source.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.source)},
      {"dataFile", r.data_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.data_file)},
      // An unreadable backup's metadata is unknown: its codec and encryption too.
      {"compression",
       r.format == kUnreadableFormat ? nlohmann::json(nullptr) : nlohmann::json(compression_name(r.compression))},
      {"encryption", r.format == kUnreadableFormat ? nlohmann::json(nullptr) : nlohmann::json(r.encryption)},
      {"encryptedTo", r.encrypted_to},
      {"storedSize", r.stored_size},
      {"dbSize", optional_json(r.db_size)},
      {"revision", optional_json(r.revision)},
      {"revisionExact", r.revision_exact},
      {"dbSha256", r.db_sha256.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.db_sha256)},
      {"storedSha256", r.stored_sha256.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.stored_sha256)},
      {"etcdVersion", r.etcd_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.etcd_version)},
      {"clusterId", r.cluster_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.cluster_id)},
      {"memberId", r.member_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.member_id)},
  };
  // From the last `backup verify` (catalog cache): null when never verified.
  const auto& v = r.verification;
  j["verifiedRevision"] = v ? nlohmann::json(v->revision) : nlohmann::json(nullptr);
  j["totalKey"] = v ? nlohmann::json(v->total_key) : nlohmann::json(nullptr);
  j["liveKeys"] = v ? nlohmann::json(v->live_keys) : nlohmann::json(nullptr);
  j["hash"] = v ? nlohmann::json(v->hash) : nlohmann::json(nullptr);
  j["verifiedAt"] = v ? time_json(v->verified_at_micros) : nlohmann::json(nullptr);
  // Known damage (store marker or this host's catalog): null when none is known.
  if (r.damage) {
    j["damaged"] = {{"reason", r.damage->reason},
                    {"detectedAt", time_json(r.damage->detected_at_micros)},
                    {"detectedBy", r.damage->detected_by},
                    {"inStore", r.damage->in_store}};
  } else {
    j["damaged"] = nullptr;
  }
  j["status"] = r.damage ? "damaged" : v ? "verified" : "unverified";
  // The last `backup drill` (the store's etcdadm-drill.json): null when never drilled.
  if (r.drill) {
    j["lastDrill"] = {{"drilledAt", time_json(r.drill->drilled_at_micros)},
                      {"result", r.drill->passed ? "passed" : "failed"},
                      {"rtoSeconds", r.drill->rto_seconds},
                      {"message", r.drill->message},
                      {"drilledBy", r.drill->drilled_by},
                      {"etcdVersion", r.drill->etcd_version}};
  } else {
    j["lastDrill"] = nullptr;
  }
  return j;
}

nlohmann::json attempt_json(const AttemptRecord& a) {
  return {{"startedAt", time_json(a.started_micros)},
          {"durationSeconds", static_cast<double>(a.finished_micros - a.started_micros) / 1e6},
          {"result", a.result},
          {"origin", a.origin},
          {"reason", a.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.reason)},
          {"message", a.message.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.message)},
          {"backup", a.backup_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.backup_name)}};
}

}  // namespace etcdadm::render

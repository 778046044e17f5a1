#include "render/backup_verification.h"

#include "common/text.h"
#include "render/change_log.h"

namespace etcdadm::render {

nlohmann::json backup_verification_json(const BackupVerification& v) {
  const bool read_db = !v.stored_bytes_only;
  const auto& r = v.fetch;
  const auto& deep = v.structure;
  return {{"backup", v.backup.name},
          {"store", v.store_url},
          {"ok", true},
          {"structure", deep ? "checked" : "skipped"},
          {"decrypted", read_db && v.backup.encrypted()},
          {"storedSize", r.stored_bytes},
          {"storedSha256", r.stored_sha256},
          {"dbSize", read_db ? nlohmann::json(r.digest.db_bytes) : nlohmann::json(nullptr)},
          {"dbSha256", read_db ? nlohmann::json(r.digest.db_sha256) : nlohmann::json(nullptr)},
          {"hashTrailer", read_db ? nlohmann::json(r.digest.has_trailer) : nlohmann::json(nullptr)},
          {"revision", deep ? nlohmann::json(deep->status.revision) : nlohmann::json(nullptr)},
          {"totalKey", deep ? nlohmann::json(deep->status.total_key) : nlohmann::json(nullptr)},
          {"liveKeys", deep ? nlohmann::json(deep->live_keys) : nlohmann::json(nullptr)},
          {"hash", deep ? nlohmann::json(deep->status.hash) : nlohmann::json(nullptr)},
          {"totalSize", deep ? nlohmann::json(deep->status.total_size) : nlohmann::json(nullptr)},
          {"changeLog", v.change_log.segments > 0 ? change_log_check_json(v.change_log) : nlohmann::json(nullptr)}};
}

std::string backup_verification_text(const BackupVerification& v) {
  const auto& r = v.fetch;
  const std::string& name = v.backup.name;
  if (v.stored_bytes_only) {
    return "Backup " + name + ": stored bytes intact (" + human_bytes(r.stored_bytes) + ", sha256 " + r.stored_sha256 +
           "), age header well-formed\n" + "  not decrypted (no --identity): the snapshot inside is not checked\n" +
           change_log_check_text(v.change_log);
  }
  std::string out = "Backup " + name + " is intact: db " + human_bytes(r.digest.db_bytes) + ", sha256 " +
                    r.digest.db_sha256 + (r.digest.has_trailer ? " (matches its trailer)" : " (no trailer)") + "\n";
  if (const auto& deep = v.structure) {
    out += "  structure checked: revision " + std::to_string(deep->status.revision) + ", " +
           std::to_string(deep->live_keys) + " live keys, totalKey " + std::to_string(deep->status.total_key) +
           ", hash " + std::to_string(deep->status.hash) + "\n";
  } else {
    out += "  structure not checked (--shallow)\n";
  }
  return out + change_log_check_text(v.change_log);
}

}  // namespace etcdadm::render

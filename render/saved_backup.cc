#include "render/saved_backup.h"

#include "common/text.h"
#include "render/backup_record.h"

namespace etcdadm::render {

nlohmann::json saved_backup_json(const SaveResult& r) {
  auto j = backup_record_json(record_from_meta(r.meta));
  j["store"] = r.store_url;
  j["durationSeconds"] = r.meta.duration_seconds;
  return j;
}

std::string saved_backup_text(const SaveResult& r) {
  return "Saved backup " + r.meta.name + " to " + r.store_url + "\n" + "  revision " +
         (r.meta.revision ? std::to_string(*r.meta.revision) : "unknown") + ", db " + human_bytes(r.meta.db_size) +
         ", stored " + human_bytes(r.meta.stored_size) + " (" + compression_name(r.meta.compression) + "), sha256 " +
         r.meta.db_sha256 + "\n";
}

}  // namespace etcdadm::render

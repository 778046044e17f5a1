#include "render/rekey_result.h"

#include "common/text.h"

namespace etcdadm::render {

nlohmann::json rekey_result_json(const RekeyResult& r) {
  return {{"recipients", r.recipients},
          {"storeChanged", r.store_changed},
          {"rekeyed", r.rekeyed},
          {"alreadyEncryptedToThem", r.already},
          {"changeLogSegmentsRekeyed", r.segments_rekeyed},
          {"changeLogSegmentsAlready", r.segments_already},
          {"oldVersionsRemoved", r.old_versions_removed},
          {"oldVersionsKept", r.old_versions_kept}};
}

std::string rekey_result_text(const RekeyResult& r, bool all) {
  const std::string to = join_list(r.recipients);
  std::string out;
  if (r.store_changed) out += "Backups saved from now on are encrypted to " + to + "\n";
  out += "Rekeyed " + std::to_string(r.rekeyed.size()) + " backup(s) to " + to;
  if (!r.already.empty()) out += " (" + std::to_string(r.already.size()) + " already were)";
  if (r.segments_rekeyed + r.segments_already > 0) {
    out += ", and " + std::to_string(r.segments_rekeyed) + " change log segment(s)";
    if (r.segments_already > 0) out += " (" + std::to_string(r.segments_already) + " already were)";
  }
  out += "\n";
  if (r.old_versions_removed > 0) {
    out += "Removed " + std::to_string(r.old_versions_removed) +
           " noncurrent version(s) of the replaced files from the versioned bucket\n";
  }
  for (const auto& kept : r.old_versions_kept) {
    out += "The bucket keeps a version encrypted to the old recipients (lock or retention): " + kept + "\n";
  }
  if (!r.store_changed && !all) return out;
  if (all) {
    return out +
           "An old identity no longer opens these backups in the store; copies made before (downloads, backups of the "
           "bucket) still open with it: docs/encryption.md\n";
  }
  return out + "Existing backups still open with the old keys until rekeyed: etcdadm backup rekey --all\n";
}

}  // namespace etcdadm::render

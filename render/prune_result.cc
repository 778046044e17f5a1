#include "render/prune_result.h"

namespace etcdadm::render {

nlohmann::json prune_result_json(const PruneResult& r, const std::string& policy) {
  nlohmann::json j = {{"policy", policy},
                      {"dryRun", r.dry_run},
                      {"keep", r.plan.keep},
                      {"delete", r.plan.remove},
                      {"deleted", r.deleted},
                      {"changeLogSegments", r.segments_removed.size()},
                      {"changeLogLateMarkers", r.late_markers_removed.size()},
                      {"unparseable", r.plan.unparseable},
                      {"future", r.plan.future},
                      {"versionedBucket", r.versions.versioned},
                      {"noncurrentVersionsRemoved", r.versions.removed},
                      {"noncurrentVersionsKept", r.versions.refused}};
  nlohmann::json locked = nlohmann::json::array();
  for (const auto& [name, why] : r.locked) locked.push_back({{"backup", name}, {"kept", why}});
  j["locked"] = locked;
  nlohmann::json not_whole = nlohmann::json::array();
  for (const auto& [name, why] : r.plan.not_whole) not_whole.push_back({{"backup", name}, {"why", why}});
  j["notWhole"] = not_whole;
  return j;
}

std::string prune_result_text(const PruneResult& r, const std::string& policy, bool kept_noncurrent_versions) {
  const std::string deletes = r.dry_run ? "would delete " : "deleted ";
  std::string out = "Policy " + policy + ": keep " + std::to_string(r.plan.keep.size()) + ", " + deletes +
                    std::to_string(r.plan.remove.size()) + "\n";
  for (const auto& n : r.plan.remove) out += "  " + deletes + n + "\n";
  for (const auto& n : r.plan.unparseable) out += "  left alone (name is not a backup time): " + n + "\n";
  for (const auto& n : r.plan.future) out += "  left alone, not counted (dated after this host's clock): " + n + "\n";
  for (const auto& [name, why] : r.plan.not_whole) out += "  left alone, not counted (" + why + "): " + name + "\n";
  for (const auto& [name, why] : r.locked) out += "  locked by the store, " + why + ": " + name + "\n";
  if (!r.segments_removed.empty()) {
    out += "  " + deletes + std::to_string(r.segments_removed.size()) + " change log segments no kept backup needs\n";
  }
  if (r.versions.removed > 0) {
    out += "  versioned bucket: removed " + std::to_string(r.versions.removed) +
           " noncurrent versions and delete markers\n";
  }
  for (const auto& kept : r.versions.refused) out += "  versioned bucket keeps (lock or retention): " + kept + "\n";
  if (kept_noncurrent_versions && !r.dry_run) {
    out += "  noncurrent versions kept (--keep-noncurrent-versions): the bucket's lifecycle rule must expire them\n";
  }
  return out;
}

}  // namespace etcdadm::render

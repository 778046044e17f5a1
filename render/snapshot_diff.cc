#include "render/snapshot_diff.h"

#include <fmt/printf.h>

#include "common/key_text.h"
#include "render/json.h"

namespace etcdadm::render {

nlohmann::json snapshot_diff_json(const SnapshotDiff& d, const nlohmann::json& a, const nlohmann::json& b,
                                  const std::string& key, bool prefix) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : d.entries) {
    nlohmann::json j = {{"kind", key_diff_kind_name(e.kind)},
                        {"modRevisionA", e.mod_revision_a},
                        {"modRevisionB", e.mod_revision_b},
                        {"sizeA", e.size_a},
                        {"sizeB", e.size_b}};
    put_bytes_json(j, "key", e.key);
    entries.push_back(std::move(j));
  }
  return {{"a", a},
          {"b", b},
          {"key", key},
          {"prefix", prefix},
          {"added", d.added},
          {"removed", d.removed},
          {"changed", d.changed},
          {"unchanged", d.unchanged},
          {"entries", entries}};
}

std::string snapshot_diff_text(const SnapshotDiff& d) {
  std::string out;
  for (const auto& e : d.entries) {
    const char* mark = e.kind == KeyDiff::Kind::kAdded ? "+" : e.kind == KeyDiff::Kind::kRemoved ? "-" : "~";
    out += fmt::sprintf("%s %s\n", mark, printable_bytes(e.key, 200));
  }
  return out + fmt::sprintf("%llu added, %llu removed, %llu changed, %llu unchanged\n",
                            static_cast<unsigned long long>(d.added), static_cast<unsigned long long>(d.removed),
                            static_cast<unsigned long long>(d.changed), static_cast<unsigned long long>(d.unchanged));
}

}  // namespace etcdadm::render

// `backup diff`: the keys added, removed and changed between two snapshots.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "inspect/snapshot_diff.h"

namespace etcdadm::render {

// `a`, `b`: the two snapshots' sources (render/snapshot_inspection.h); `key` as given, and whether
// it was a prefix (every key when none was given).
nlohmann::json snapshot_diff_json(const SnapshotDiff& d, const nlohmann::json& a, const nlohmann::json& b,
                                  const std::string& key, bool prefix);
std::string snapshot_diff_text(const SnapshotDiff& d);

}  // namespace etcdadm::render

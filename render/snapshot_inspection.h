// What a snapshot holds, as `backup inspect` prints it (etcdctl's `snapshot status` fields,
// members, keys per prefix, leases, auth, alarms), and how the commands that read one snapshot
// (inspect, get, diff, restore-keys) name where it came from: a backup in a store, or a file.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "etcd/datadir/snapshot_inspect.h"

namespace etcdadm::render {

// The snapshot's source, merged into each of those commands' JSON (and read back by the inspect
// table): {"backup", "store"}, or {"file"} with "trailerChecked" when the trailer check was a
// choice (`trailer_checked` set).
nlohmann::json backup_source_json(const std::string& backup, const std::string& store_url);
nlohmann::json file_source_json(const std::string& file, std::optional<bool> trailer_checked);

// `status_total_key`: totalKey as the chosen `semantics` count it (every bbolt entry, or live keys);
// `source`: one of the two above.
nlohmann::json snapshot_inspection_json(const SnapshotInspection& r, StatusSemantics semantics,
                                        int64_t status_total_key, const nlohmann::json& source);
std::string snapshot_inspection_text(const SnapshotInspection& r, int64_t status_total_key,
                                     const nlohmann::json& source);

}  // namespace etcdadm::render

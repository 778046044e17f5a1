// `backup get`: keys as they were when a snapshot was taken, in the three forms it prints: JSON, a
// table, and raw (etcdctl's simple format, the bytes as they are).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "etcd/datadir/snapshot_inspect.h"

namespace etcdadm::render {

// `source`: render/snapshot_inspection.h's backup_source_json or file_source_json; `revision`: the
// snapshot's. With `keys_only` the values are left out.
nlohmann::json snapshot_keys_json(const nlohmann::json& source, int64_t revision,
                                  const std::vector<SnapshotKeyValue>& kvs, bool keys_only);
std::string snapshot_keys_text(const std::vector<SnapshotKeyValue>& kvs, int64_t revision, bool keys_only);
// Each key on a line, then its value as it is; one exact key (not `prefix`) prints its value alone.
std::string snapshot_keys_raw(const std::vector<SnapshotKeyValue>& kvs, bool keys_only, bool prefix);

}  // namespace etcdadm::render

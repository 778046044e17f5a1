// `backup restore-keys`: what was done (or on a dry run, would be) to each key put back into a
// live cluster, and the counts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "inspect/restore_keys.h"

namespace etcdadm::render {

// `source`: the backup's (render/snapshot_inspection.h); `o`: the options the restore ran with.
nlohmann::json restore_keys_result_json(const RestoreKeysResult& r, const nlohmann::json& source,
                                        const RestoreKeysOptions& o);
std::string restore_keys_result_text(const RestoreKeysResult& r, const RestoreKeysOptions& o);

}  // namespace etcdadm::render

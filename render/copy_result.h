// `backup copy`: each backup copied or found present in the target, and the change log's segments.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "restore/backup_copy.h"

namespace etcdadm::render {

nlohmann::json copy_result_json(const CopyResult& r, const std::string& from_url, const std::string& to_url);
std::string copy_result_text(const CopyResult& r, const std::string& to_url);

}  // namespace etcdadm::render

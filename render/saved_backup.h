// A backup just written: what `backup save` and `backup import` print. The JSON is the one schema
// of a backup (render/backup_record.h) plus the store and how long the save took.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "backup/save.h"

namespace etcdadm::render {

nlohmann::json saved_backup_json(const SaveResult& r);
std::string saved_backup_text(const SaveResult& r);

}  // namespace etcdadm::render

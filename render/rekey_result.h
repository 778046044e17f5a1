// `backup rekey`: who the store's backups are encrypted to now, which were re-wrapped, and what a
// person must still know (old keys still open copies made before, or backups not yet rekeyed).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "backup/rekey.h"

namespace etcdadm::render {

nlohmann::json rekey_result_json(const RekeyResult& r);
// `all`: --all was given (every backup rekeyed), which changes the closing advice.
std::string rekey_result_text(const RekeyResult& r, bool all);

}  // namespace etcdadm::render

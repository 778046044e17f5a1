// `hashkv`: every voter's HashKV at one revision, and the verdict (they agree, a minority differs,
// no majority, or incomplete) with which members differ.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "etcdadm/maintenance/consistency.h"

namespace etcdadm::render {

nlohmann::json hash_survey_json(const HashSurvey& survey, const HashVerdict& verdict);
std::string hash_survey_text(const HashSurvey& survey, const HashVerdict& verdict);

}  // namespace etcdadm::render

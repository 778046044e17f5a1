// `defrag`: with --dry-run the plan (which members are due, in which order, and why), otherwise
// what each member's defrag did (sizes before and after, how long writes stalled).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "etcdadm/maintenance/defrag.h"

namespace etcdadm::render {

nlohmann::json defrag_plan_json(const DefragPlan& plan);
std::string defrag_plan_text(const DefragPlan& plan);

nlohmann::json defrag_result_json(const DefragResult& r);
std::string defrag_result_text(const DefragResult& r);

}  // namespace etcdadm::render

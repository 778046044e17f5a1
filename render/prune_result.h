// `backup prune`: what a retention policy kept and deleted (or on a dry run, would delete), what
// it left alone and why, and the change log segments and bucket versions removed with them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "backup/prune.h"

namespace etcdadm::render {

// `policy`: the policy as RetentionPolicy::describe() names it.
nlohmann::json prune_result_json(const PruneResult& r, const std::string& policy);
// `kept_noncurrent_versions`: --keep-noncurrent-versions was given, so the bucket's own lifecycle
// rule must expire them (the text says so).
std::string prune_result_text(const PruneResult& r, const std::string& policy, bool kept_noncurrent_versions);

}  // namespace etcdadm::render

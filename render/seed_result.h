// `etcdadm seed`: the cluster spec before and after, the controllers' spec it set, and what the
// controllers will do about it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "controller/status.h"

namespace etcdadm::render {

// `dry_run`: nothing was written; the text says "Would set".
nlohmann::json seed_result_json(const SeedResult& r, bool dry_run);
std::string seed_result_text(const SeedResult& r, bool dry_run);

}  // namespace etcdadm::render

// `upgrade plan`, `upgrade apply` and `upgrade rollback`: the plan (each member's step, whether it
// is allowed, the order) and what one change of this host's member did.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "etcdadm/upgrade/upgrade.h"

namespace etcdadm::render {

// `backup_note`: what the plan says of the backup each apply takes.
nlohmann::json upgrade_plan_json(const UpgradePlan& plan, const std::string& backup_note);
std::string upgrade_plan_text(const UpgradePlan& plan, const std::string& backup_note);

// `verb`: "Changed" or "Rolled back"; `member_name`: this host's member.
nlohmann::json upgrade_result_json(const UpgradeResult& r, const std::string& member_name);
std::string upgrade_result_text(const char* verb, const std::string& member_name, const UpgradeResult& r);

}  // namespace etcdadm::render

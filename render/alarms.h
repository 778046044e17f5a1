// etcd's alarms: `alarm list`, and `alarm recover`'s account of a NOSPACE recovery (backup,
// compaction, each member defragmented, and whether the alarm could be disarmed).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "etcdadm/maintenance/alarms.h"
#include "etcdadm/maintenance/space.h"

namespace etcdadm::render {

nlohmann::json alarm_list_json(const std::vector<MemberAlarm>& alarms);
std::string alarm_list_text(const std::vector<MemberAlarm>& alarms);

nlohmann::json space_recovery_json(const SpaceRecoveryResult& r);
std::string space_recovery_text(const SpaceRecoveryResult& r);

}  // namespace etcdadm::render

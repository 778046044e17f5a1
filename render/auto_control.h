// What a person's commands to the controllers of a store say they did: `auto pause`, `auto resume`
// and `auto rotate-ca`. (`auto status` renders itself: controller/status.h.)
#pragma once

#include <string>

#include "controller/records.h"

namespace etcdadm::render {

std::string auto_paused_text(const std::string& store_url);
std::string auto_resumed_text(const std::string& store_url);
std::string ca_rotation_started_text(const CaRotationRecord& r, const std::string& store_url);

}  // namespace etcdadm::render

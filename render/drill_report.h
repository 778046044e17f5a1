// `backup drill`'s report as a table. Its JSON is restore/drill.h's drill_report_json: the same
// document is stored beside the backup (etcdadm-drill.json), so it belongs to the drill itself.
#pragma once

#include <string>

#include "restore/drill.h"

namespace etcdadm::render {

std::string drill_report_text(const DrillReport& r);

}  // namespace etcdadm::render

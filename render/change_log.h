// The change log as results show it: how far point-in-time restores from a backup reach (`backup
// list`), what `backup verify` found of a backup's log, and a late window (commit times known only
// approximately), which `backup list` and a point-in-time restore print alike.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "restore/pitr.h"

namespace etcdadm::render {

// A late window of the change log (changelog/segment.h LateWindow), as `backup list`'s
// `changeLog.late` and a point-in-time restore's `replay.late` print it.
nlohmann::json late_window_json(int64_t first_revision, int64_t last_revision, int64_t committed_after_micros,
                                int64_t received_micros);
// `backup list`'s `changeLog` of the backup `name`: null when no change log extends it.
nlohmann::json log_window_json(const std::map<std::string, LogWindow>& windows, const std::string& name);
// `backup verify`'s report of a backup's change log (restore/pitr.h verify_change_log): JSON, and
// the lines of the table output (none when the backup has no log).
nlohmann::json change_log_check_json(const ChangeLogCheck& log);
std::string change_log_check_text(const ChangeLogCheck& log);

}  // namespace etcdadm::render

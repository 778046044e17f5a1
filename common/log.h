// Logging setup: human text to stderr (stdout is kept for command output, so `-o json` stays
// parseable). Secrets must never be passed to the logger.
#pragma once

#include <spdlog/spdlog.h>

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace etcdadm {

// level: trace|debug|info|warn|error|off. Unknown levels fall back to info.
// format: "text" (human lines) or "json" (one object per line, for log collectors).
void init_logging(const std::string& level, const std::string& format = "text");

// A log line carrying extra fields: with the json format they are merged into its object (beside
// time, level, msg); the text format shows only `msg`.
void log_with_fields(spdlog::level::level_enum level, const std::string& msg, const nlohmann::json& fields);

bool stderr_is_terminal();

// The live status line at the bottom of a terminal (common/progress.h): log lines written while it
// shows appear above it, and it is redrawn below them. Cut to the terminal's width, since a line
// that wraps could no longer be erased by a carriage return.
void show_status_line(const std::string& text);
void clear_status_line();

}  // namespace etcdadm

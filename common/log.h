// Logging setup: human text to stderr (stdout is kept for command output, so `-o json` stays
// parseable). Secrets must never be passed to the logger.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace etcdadm {

// level: trace|debug|info|warn|error|off. Unknown levels fall back to info.
// format: "text" (human lines) or "json" (one object per line, for log collectors).
void init_logging(const std::string& level, const std::string& format = "text");

}  // namespace etcdadm

#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace etcdadm {

void init_logging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("etcdadm");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") lvl = spdlog::level::info;
  logger->set_level(lvl);
  spdlog::set_default_logger(logger);
}

}  // namespace etcdadm

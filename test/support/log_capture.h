// What spdlog's default logger writes while a LogCapture lives: tests that check what etcdadm's
// code logged (a renewal, a failover, a cached download) read it here.
#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

namespace etcdadm::test {

class LogCapture {
 public:
  // `level`: the logger's level while the capture lives (debug to see debug lines), restored after.
  explicit LogCapture(std::optional<spdlog::level::level_enum> level = std::nullopt) {
    auto logger = spdlog::default_logger();
    logger->sinks().push_back(sink_);
    if (level) {
      previous_level_ = logger->level();
      logger->set_level(*level);
    }
  }
  ~LogCapture() {
    auto logger = spdlog::default_logger();
    if (previous_level_) logger->set_level(*previous_level_);
    auto& sinks = logger->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  bool has(const std::string& text) const { return out_.str().find(text) != std::string::npos; }
  size_t count(const std::string& text) const {
    const std::string all = out_.str();
    size_t n = 0;
    for (size_t at = all.find(text); at != std::string::npos; at = all.find(text, at + text.size())) ++n;
    return n;
  }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
  std::optional<spdlog::level::level_enum> previous_level_;
};

}  // namespace etcdadm::test

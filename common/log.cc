#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

namespace etcdadm {

namespace {

// Extra fields of the line being formatted on this thread (log_with_fields). spdlog's stderr logger
// formats synchronously on the calling thread, so a thread-local hands them to the formatter.
thread_local const nlohmann::json* t_extra_fields = nullptr;

// One JSON object per line: {"time":"2026-11-21T10:04:05.123Z","level":"info","msg":"..."}.
// The message goes through a JSON encoder, so quotes and newlines in it stay one valid line.
class JsonFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto t = msg.time;
    std::time_t secs = std::chrono::system_clock::to_time_t(t);
    auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[40];
    std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(stamp + n, sizeof stamp - n, ".%03dZ", static_cast<int>(millis));
    nlohmann::json line = {{"time", stamp},
                           {"level", spdlog::level::to_string_view(msg.level).data()},
                           {"msg", std::string(msg.payload.data(), msg.payload.size())}};
    if (t_extra_fields != nullptr && t_extra_fields->is_object()) {
      for (const auto& [k, v] : t_extra_fields->items()) {
        if (!line.contains(k)) line[k] = v;
      }
    }
    std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

// stderr with room for a live status line: a log line erases the status line, is written, and the
// status line is drawn again below it. One mutex orders both.
class TerminalSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  TerminalSink() : inner_(std::make_shared<spdlog::sinks::stderr_color_sink_mt>()) {}

  void show_status(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = text;
    draw();
  }

  void clear_status() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.empty()) return;
    status_.clear();
    erase();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (!status_.empty()) erase();
    inner_->log(msg);
    inner_->flush();
    if (!status_.empty()) draw();
  }
  void flush_() override { inner_->flush(); }
  void set_pattern_(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter_(std::unique_ptr<spdlog::formatter> f) override { inner_->set_formatter(std::move(f)); }

 private:
  static void erase() {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }

  void draw() {
    std::string line = status_;
    winsize ws{};
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && line.size() >= ws.ws_col)
      line.resize(ws.ws_col - 1);
    std::fputs(("\r\033[K" + line).c_str(), stderr);
    std::fflush(stderr);
  }

  std::shared_ptr<spdlog::sinks::sink> inner_;
  std::string status_;
};

std::shared_ptr<TerminalSink>& terminal_sink() {
  static auto sink = std::make_shared<TerminalSink>();
  return sink;
}

}  // namespace

void init_logging(const std::string& level, const std::string& format) {
  auto logger = std::make_shared<spdlog::logger>("etcdadm", terminal_sink());
  if (format == "json") {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  }
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") lvl = spdlog::level::info;
  logger->set_level(lvl);
  spdlog::set_default_logger(logger);
}

void log_with_fields(spdlog::level::level_enum level, const std::string& msg, const nlohmann::json& fields) {
  t_extra_fields = &fields;
  try {
    spdlog::log(level, "{}", msg);
  } catch (...) {
    t_extra_fields = nullptr;
    throw;
  }
  t_extra_fields = nullptr;
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

void show_status_line(const std::string& text) { terminal_sink()->show_status(text); }

void clear_status_line() { terminal_sink()->clear_status(); }

}  // namespace etcdadm

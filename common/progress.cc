#include "common/progress.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/log.h"
#include "common/text.h"

namespace etcdadm {

namespace {

// The live line is redrawn this often: often enough to look alive, rarely enough to cost nothing.
constexpr std::chrono::milliseconds kLiveRedraw{250};

std::mutex& settings_mutex() {
  static std::mutex mu;
  return mu;
}

ProgressSettings& settings() {
  static ProgressSettings s;
  return s;
}

ProgressSettings current_settings() {
  std::lock_guard<std::mutex> lock(settings_mutex());
  return settings();
}

std::string count_text(ProgressUnit unit, uint64_t n) {
  if (unit == ProgressUnit::kBytes) return human_bytes(n);
  return std::to_string(n) + (n == 1 ? " revision" : " revisions");
}

std::string rate_text(ProgressUnit unit, double per_second) {
  if (unit == ProgressUnit::kBytes) return human_bytes(static_cast<uint64_t>(per_second)) + "/s";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f revisions/s", per_second);
  return buf;
}

std::string duration_text(double seconds) {
  auto s = static_cast<uint64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lluh%02llum", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s % 3600 / 60));
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%llum%02llus", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%llus", static_cast<unsigned long long>(s));
  return buf;
}

}  // namespace

void set_progress_settings(const ProgressSettings& s) {
  std::lock_guard<std::mutex> lock(settings_mutex());
  settings() = s;
}

ProgressMode parse_progress_mode(const std::string& text) {
  if (text == "auto") return ProgressMode::kAuto;
  if (text == "always") return ProgressMode::kAlways;
  if (text == "never") return ProgressMode::kNever;
  throw Error(ErrorKind::kInvalidArgument, "--progress " + text + " is not auto, always or never");
}

ProgressStyle progress_style(const ProgressSettings& s, bool terminal) {
  if (s.mode == ProgressMode::kNever) return ProgressStyle::kNone;
  // A log collector reads JSON: periodic structured lines, terminal or not (a live line would mix
  // control characters into its lines).
  if (s.json_log) return ProgressStyle::kPeriodicJson;
  if (terminal) return ProgressStyle::kLiveLine;
  return s.mode == ProgressMode::kAlways ? ProgressStyle::kPeriodicText : ProgressStyle::kNone;
}

std::optional<int> progress_percent(const ProgressSnapshot& s) {
  if (s.total == 0) return std::nullopt;
  // The member's reported db size is an estimate of the snapshot's: the stream may run past it.
  if (s.done >= s.total) return 100;
  return static_cast<int>(s.done * 100 / s.total);
}

std::string describe_progress(const ProgressSnapshot& s) {
  std::string out = count_text(s.unit, s.done);
  if (auto pct = progress_percent(s)) out += " of " + count_text(s.unit, s.total) + " (" + std::to_string(*pct) + "%)";
  if (!s.secondary_label.empty()) out += ", " + s.secondary_label + " " + count_text(s.unit, s.secondary);
  if (s.seconds >= 0.5 && s.done > 0) {
    double rate = static_cast<double>(s.done) / s.seconds;
    out += ", " + rate_text(s.unit, rate);
    if (s.total > s.done && rate > 0)
      out += ", " + duration_text(static_cast<double>(s.total - s.done) / rate) + " left";
  }
  return out;
}

bool progress_shown() { return progress_style(current_settings(), stderr_is_terminal()) != ProgressStyle::kNone; }

Progress::Progress(std::string what, ProgressUnit unit, uint64_t total)
    : what_(std::move(what)), unit_(unit), started_(std::chrono::steady_clock::now()), total_(total) {
  ProgressSettings s = current_settings();
  style_ = progress_style(s, stderr_is_terminal());
  interval_ = style_ == ProgressStyle::kLiveLine ? kLiveRedraw : std::max(s.interval, std::chrono::milliseconds(100));
  if (style_ == ProgressStyle::kNone) return;
  // The live line appears at once, so that even short work shows what it did.
  if (style_ == ProgressStyle::kLiveLine) report();
  reporter_ = std::thread([this] { run(); });
}

Progress::~Progress() {
  try {
    finish();
  } catch (...) {
    // A destructor runs while unwinding too; a failed last report must not terminate the process.
  }
}

void Progress::set_secondary_label(std::string label) {
  std::lock_guard<std::mutex> lock(mu_);
  secondary_label_ = std::move(label);
}

void Progress::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  if (reporter_.joinable()) reporter_.join();
  if (style_ == ProgressStyle::kLiveLine) {
    report();
    clear_status_line();
  }
}

ProgressSnapshot Progress::snapshot() const {
  ProgressSnapshot s;
  s.unit = unit_;
  s.done = done_.load(std::memory_order_relaxed);
  s.total = total_.load(std::memory_order_relaxed);
  s.secondary = secondary_.load(std::memory_order_relaxed);
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return s;
}

void Progress::report() {
  ProgressSnapshot s = snapshot();
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.secondary_label = secondary_label_;
  }
  const std::string text = what_ + ": " + describe_progress(s);
  switch (style_) {
    case ProgressStyle::kNone:
      return;
    case ProgressStyle::kLiveLine:
      show_status_line(text);
      return;
    case ProgressStyle::kPeriodicText:
      spdlog::info("{}", text);
      return;
    case ProgressStyle::kPeriodicJson: {
      nlohmann::json fields = {{"progress", what_},
                               {"unit", unit_ == ProgressUnit::kBytes ? "bytes" : "revisions"},
                               {"done", s.done},
                               {"elapsedSeconds", std::round(s.seconds * 10) / 10}};
      if (s.total > 0) {
        fields["total"] = s.total;
        fields["percent"] = *progress_percent(s);
      }
      if (!s.secondary_label.empty()) fields[s.secondary_label] = s.secondary;
      if (s.seconds > 0) fields["rate"] = std::round(static_cast<double>(s.done) / s.seconds);
      log_with_fields(spdlog::level::info, text, fields);
      return;
    }
  }
}

void Progress::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (cv_.wait_for(lock, interval_, [this] { return stopping_; })) return;
    lock.unlock();
    report();
    lock.lock();
  }
}

}  // namespace etcdadm

// Progress of long work (a save, a fetch of a stored backup, a change-log replay) for the person or
// the log collector watching it. Three ways to show it, chosen once per process (main's
// --progress and --log-format):
//   - a live line on stderr, redrawn a few times a second and cleared at the end, when stderr is a
//     terminal (--progress auto, the default, or always) and the log format is text;
//   - a structured log line every --progress-interval with --log-format json (fields "progress",
//     "done", "total", "percent", "rate", "unit"), so that sidecar and CI logs show long work;
//   - a plain log line every interval with --progress always when stderr is no terminal.
// Nothing at all otherwise: output without a terminal is what it was before progress existed.
// Counting is one relaxed atomic add per chunk; rendering runs on a thread of its own, so a slow
// terminal never slows the work (bench/docs/save_variants_bench.md measures a save with and without).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/byte_sink.h"

namespace etcdadm {

enum class ProgressMode { kAuto, kAlways, kNever };

struct ProgressSettings {
  ProgressMode mode = ProgressMode::kAuto;
  bool json_log = false;                      // --log-format json: structured periodic lines
  std::chrono::milliseconds interval{10000};  // between periodic lines (not the live line's redraws)
};

// Set once by main before any work starts; the default shows nothing unless stderr is a terminal.
void set_progress_settings(const ProgressSettings& settings);
ProgressMode parse_progress_mode(const std::string& text);  // auto|always|never, else kInvalidArgument

// How a Progress shows itself under the process's settings and the given terminal state; pure, for
// the unit tests.
enum class ProgressStyle { kNone, kLiveLine, kPeriodicText, kPeriodicJson };
ProgressStyle progress_style(const ProgressSettings& settings, bool stderr_is_terminal);

// Whether a Progress started now would show anything (the process's settings, stderr a
// terminal): work that must ask for its total first (a HEAD request) asks only then.
bool progress_shown();

enum class ProgressUnit { kBytes, kRevisions };

// "12.3 MiB of 400.0 MiB (3%), stored 4.1 MiB, 52.3 MiB/s, 7s left": what one report says. Pure.
struct ProgressSnapshot {
  ProgressUnit unit = ProgressUnit::kBytes;
  uint64_t done = 0;
  uint64_t total = 0;  // 0: unknown
  uint64_t secondary = 0;
  std::string secondary_label;  // "" when there is no second count
  double seconds = 0;           // since the work started
};
std::string describe_progress(const ProgressSnapshot& s);
std::optional<int> progress_percent(const ProgressSnapshot& s);  // nullopt without a total; capped at 100

// One piece of long work. Constructed when it starts, destroyed (or finish()ed) when it ends; the
// counting methods may be called from any thread.
class Progress {
 public:
  // `what`: the work, as a message names it ("backup 2026-11-26T10:00:00Z save").
  Progress(std::string what, ProgressUnit unit, uint64_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add(uint64_t n) { done_.fetch_add(n, std::memory_order_relaxed); }
  // A second count shown beside the first ("stored" bytes after compression and encryption).
  void add_secondary(uint64_t n) { secondary_.fetch_add(n, std::memory_order_relaxed); }
  void set_secondary_label(std::string label);
  void set_total(uint64_t total) { total_.store(total, std::memory_order_relaxed); }
  // Stops reporting: the live line shows its final state once and is cleared. Idempotent.
  void finish();

 private:
  ProgressSnapshot snapshot() const;
  void report();
  void run();

  std::string what_;
  ProgressUnit unit_;
  ProgressStyle style_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point started_;
  std::atomic<uint64_t> done_{0};
  std::atomic<uint64_t> total_{0};
  std::atomic<uint64_t> secondary_{0};
  std::string secondary_label_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool finished_ = false;
  std::thread reporter_;
};

// Counts the bytes written through it into a Progress's second count ("stored" bytes of a save),
// then forwards them.
class SecondaryProgressSink : public ByteSink {
 public:
  SecondaryProgressSink(ByteSink* next, Progress& progress) : next_(next), progress_(progress) {}
  void write(const uint8_t* data, size_t size) override {
    progress_.add_secondary(size);
    if (next_ != nullptr) next_->write(data, size);
  }

 private:
  ByteSink* next_;
  Progress& progress_;
};

}  // namespace etcdadm

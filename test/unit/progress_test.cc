// Progress reports (common/progress.h): which style each setting gives, and what a report says.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "common/error.h"
#include "common/progress.h"

namespace etcdadm {

namespace {

size_t threads_of_this_process() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

ProgressSettings settings_of(ProgressMode mode, bool json) {
  ProgressSettings s;
  s.mode = mode;
  s.json_log = json;
  return s;
}

}  // namespace

TEST(Progress, StyleFollowsTheModeTheLogFormatAndTheTerminal) {
  using M = ProgressMode;
  using S = ProgressStyle;
  // auto: a live line on a terminal, nothing without one (output unchanged), JSON lines for collectors.
  EXPECT_EQ(progress_style(settings_of(M::kAuto, false), true), S::kLiveLine);
  EXPECT_EQ(progress_style(settings_of(M::kAuto, false), false), S::kNone);
  EXPECT_EQ(progress_style(settings_of(M::kAuto, true), false), S::kPeriodicJson);
  EXPECT_EQ(progress_style(settings_of(M::kAuto, true), true), S::kPeriodicJson);
  EXPECT_EQ(progress_style(settings_of(M::kAlways, false), true), S::kLiveLine);
  EXPECT_EQ(progress_style(settings_of(M::kAlways, false), false), S::kPeriodicText);
  EXPECT_EQ(progress_style(settings_of(M::kAlways, true), false), S::kPeriodicJson);
  for (bool json : {false, true}) {
    for (bool tty : {false, true}) EXPECT_EQ(progress_style(settings_of(M::kNever, json), tty), S::kNone);
  }
}

TEST(Progress, ModesParseAndOthersAreRefused) {
  EXPECT_EQ(parse_progress_mode("auto"), ProgressMode::kAuto);
  EXPECT_EQ(parse_progress_mode("always"), ProgressMode::kAlways);
  EXPECT_EQ(parse_progress_mode("never"), ProgressMode::kNever);
  EXPECT_THROW(parse_progress_mode("yes"), Error);
}

TEST(Progress, DescriptionsKnownAnswers) {
  ProgressSnapshot s;
  s.done = 0;
  s.total = 400 << 20;
  EXPECT_EQ(describe_progress(s), "0 B of 400.0 MiB (0%)");

  s.done = 100 << 20;
  s.secondary_label = "stored";
  s.secondary = 30 << 20;
  s.seconds = 2;
  EXPECT_EQ(describe_progress(s), "100.0 MiB of 400.0 MiB (25%), stored 30.0 MiB, 50.0 MiB/s, 6s left");

  // The member's db size is an estimate: a stream that runs past it shows 100%, not 101%.
  s.done = 401 << 20;
  s.secondary_label.clear();
  s.seconds = 4;
  EXPECT_EQ(describe_progress(s), "401.0 MiB of 400.0 MiB (100%), 100.2 MiB/s");

  // No total: a count and a rate, no percentage or time left.
  ProgressSnapshot u;
  u.done = 3ull << 30;
  u.seconds = 90;
  EXPECT_EQ(describe_progress(u), "3.0 GiB, 34.1 MiB/s");
  EXPECT_FALSE(progress_percent(u).has_value());

  ProgressSnapshot r;
  r.unit = ProgressUnit::kRevisions;
  r.done = 1500;
  r.total = 6000;
  r.seconds = 3;
  EXPECT_EQ(describe_progress(r), "1500 revisions of 6000 revisions (25%), 500 revisions/s, 9s left");
  r.done = 1;
  r.total = 0;
  r.seconds = 0.1;  // too early for a rate
  EXPECT_EQ(describe_progress(r), "1 revision");

  ProgressSnapshot slow;
  slow.done = 1 << 20;
  slow.total = 3601ull << 20;
  slow.seconds = 1;
  EXPECT_EQ(describe_progress(slow), "1.0 MiB of 3.5 GiB (0%), 1.0 MiB/s, 1h00m left");
  slow.total = 181ull << 20;
  EXPECT_EQ(describe_progress(slow), "1.0 MiB of 181.0 MiB (0%), 1.0 MiB/s, 3m00s left");
}

TEST(Progress, WithoutATerminalNothingRunsAndCountingIsHarmless) {
  set_progress_settings(settings_of(ProgressMode::kAuto, false));
  // stderr goes to a file for the duration (so it is no terminal, whatever runs the test), and the
  // threads of this process are counted: no reporter thread may start, not a byte may be written.
  char path[] = "/tmp/etcdadm-progress-stderr-XXXXXX";
  int file = ::mkstemp(path);
  ASSERT_GE(file, 0);
  std::fflush(stderr);
  int saved = ::dup(2);
  ::dup2(file, 2);
  size_t threads_before = threads_of_this_process();
  size_t threads_during = 0;
  {
    Progress p("test", ProgressUnit::kBytes, 10);
    p.add(5);
    p.add_secondary(2);
    threads_during = threads_of_this_process();
    p.finish();
    p.finish();  // idempotent
  }
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  struct stat st {};
  ::fstat(file, &st);
  ::close(file);
  ::unlink(path);
  EXPECT_EQ(threads_during, threads_before);
  EXPECT_EQ(st.st_size, 0);
}

}  // namespace etcdadm

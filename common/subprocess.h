// Running helper programs (etcdctl, etcdutl, etcd) without a shell: argv is passed as is, so no
// quoting problems and no injection. Output is captured or sent to a log file.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace etcdadm {

struct ProcessResult {
  int exit_code = -1;  // exit status, or 128+signal when killed by a signal
  std::string output;  // stdout and stderr, interleaved
  bool timed_out = false;
  bool cancelled = false;
};

struct RunOptions {
  std::map<std::string, std::string> env;  // added to (or overriding) the current environment
  std::vector<std::string> unset_env;      // removed from the environment
  std::optional<std::chrono::milliseconds> timeout;
  std::string working_dir;
  // When it becomes true (checked every 100 ms), the child gets SIGTERM, then SIGKILL 5 s later;
  // run_process returns with `cancelled` set.
  const std::atomic<bool>* cancel = nullptr;
};

// Runs argv[0] (looked up on PATH) to completion. Throws only when it cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const RunOptions& options = {});

// Full path of `name` found on PATH (or `name` itself when it contains a '/' and is executable).
std::optional<std::string> find_executable(const std::string& name);

// A long-running child (etcd in tests and in the `process` init system). stdout/stderr go to
// `log_path` (appended). The destructor does NOT stop the child: call stop() explicitly.
class ChildProcess {
 public:
  ChildProcess() = default;
  static ChildProcess start(const std::vector<std::string>& argv, const std::string& log_path,
                            const RunOptions& options = {});
  pid_t pid() const { return pid_; }
  bool running();
  // SIGTERM, then SIGKILL after `grace`; reaps the child. Returns its exit code.
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
  void kill_now(int signal);
  int wait();

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

}  // namespace etcdadm

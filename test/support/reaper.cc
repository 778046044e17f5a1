#include "test/support/reaper.h"

#include "test/support/test_env.h"
#include <fcntl.h>

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace etcdadm::test {

namespace {

pid_t g_test_process = -1;

void forward_signal(int sig) {
  if (g_test_process > 0) ::kill(g_test_process, sig);
}

struct Child {
  pid_t pid;
  bool exiting;
};

std::vector<Child> children_of_this_process() {
  std::vector<Child> out;
  const pid_t self = ::getpid();
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::string stat = read_proc_file("/proc/" + std::string(e->d_name) + "/stat");
    auto parsed = parse_proc_stat(stat);
    if (!parsed || parsed->ppid != self) continue;
    out.push_back({static_cast<pid_t>(pid), parsed->exiting});
  }
  ::closedir(proc);
  return out;
}

std::string command_line(pid_t pid) {
  std::string raw = read_proc_file("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  while (!raw.empty() && raw.back() == ' ') raw.pop_back();
  if (raw.size() > 300) raw = raw.substr(0, 300) + "...";
  return raw.empty() ? "(exited)" : raw;
}

void reap_exited() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

// Kills what is left below this process (a killed daemon's own children are reparented here in
// turn) until nothing is; returns how many were found.
int kill_leftovers() {
  int found = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    reap_exited();
    auto left = children_of_this_process();
    if (left.empty()) break;
    for (const Child& c : left) {
      // A process that is already exiting was stopped, or failed, by itself: a daemon whose exec
      // failed is re-parented here while it exits, after its starter has read why. It is only
      // waited for, until it is a zombie reaped above.
      if (c.exiting) continue;
      const pid_t pid = c.pid;
      std::string cmd = command_line(pid);
      if (::kill(pid, SIGKILL) == 0) {
        ++found;
        std::fprintf(stderr, "[reaper] the test process left pid %d running; killed it: %s\n", static_cast<int>(pid), cmd.c_str());
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "[reaper] processes still left after 20 s of killing\n");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  reap_exited();
  return found;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(const std::string& stat) {
  constexpr unsigned long kPfExiting = 0x4;  // the kernel's PF_EXITING: set when exit() begins
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(paren + 1));
  std::string state;
  long ppid = 0, pgrp = 0, session = 0, tty = 0, tpgid = 0;
  unsigned long flags = 0;
  if (!(fields >> state >> ppid >> pgrp >> session >> tty >> tpgid >> flags)) return std::nullopt;
  ProcStat out;
  out.ppid = static_cast<pid_t>(ppid);
  out.exiting = state == "Z" || state == "X" || (flags & kPfExiting) != 0;
  return out;
}

int run_tests_reaping_leftovers(int argc, char** argv, const std::function<int()>& run) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--gtest_internal_run_death_test", 0) == 0) return run();
  }
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    std::perror("[reaper] prctl(PR_SET_CHILD_SUBREAPER)");
    return run();
  }
  // If whatever started this process (ctest) dies, the SIGTERM that brings is forwarded to the test
  // process below, and the clean-up runs as after any other end of it.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ::setenv("ETCDADM_TEST_PROCESS", std::to_string(::getpid()).c_str(), 1);
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_t child = ::fork();
  if (child < 0) {
    std::perror("[reaper] fork");
    return run();
  }
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the reaper died before the line above
    int code = run();
    std::fflush(nullptr);
    ::_exit(code);
  }
  g_test_process = child;
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  ::sigemptyset(&forward.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::sigaction(sig, &forward, nullptr);

  int code = 1;
  int died_of = 0;  // the signal that ended the test process, if one did
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: cannot happen while the test process has not been reaped
    }
    if (pid != child) continue;  // an orphan a test stopped: reaped, nothing more
    if (WIFEXITED(status)) {
      code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      died_of = WTERMSIG(status);
      code = 128 + died_of;
      std::fprintf(stderr, "[reaper] the test process died of signal %d (%s)\n", died_of, ::strsignal(died_of));
    }
    break;
  }
  int left = kill_leftovers();
  if (left > 0 && code == 0) {
    std::fprintf(stderr, "[reaper] FAILED: the tests passed but left %d process(es) running (named above): a test must stop what it starts\n", left);
    code = 1;
  }
  if (died_of != 0) {
    std::fflush(nullptr);
    ::signal(died_of, SIG_DFL);
    ::raise(died_of);
  }
  return code;
}

}  // namespace etcdadm::test

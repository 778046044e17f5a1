#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/error.h"

extern char** environ;

namespace etcdadm {

namespace {

std::vector<std::string> build_env(const RunOptions& options) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    std::string key = kv.substr(0, kv.find('='));
    bool drop = options.env.count(key) > 0;
    for (const auto& u : options.unset_env) drop = drop || u == key;
    if (!drop) out.push_back(kv);
  }
  for (const auto& [k, v] : options.env) out.push_back(k + "=" + v);
  return out;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Forks and execs; in the child, stdout/stderr go to out_fd. Never returns in the child.
pid_t spawn(const std::vector<std::string>& argv, const RunOptions& options, int out_fd) {
  if (argv.empty()) throw Error(ErrorKind::kInternal, "spawn with empty argv");
  auto exe = find_executable(argv[0]);
  if (!exe) {
    throw Error(ErrorKind::kNotFound, "program not found: " + argv[0],
                "install it or put it on PATH (or pass its full path)");
  }
  std::vector<std::string> env = build_env(options);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) throw_errno("cannot fork for", argv[0], errno);
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    if (!options.working_dir.empty() && ::chdir(options.working_dir.c_str()) != 0) _exit(127);
    // Children get their own process group so that tests can stop them without hitting us.
    ::setpgid(0, 0);
    // A signal mask is inherited across exec: the sidecar blocks SIGTERM/SIGINT in every thread (it
    // takes them with sigwait), and an etcd it starts (a drill) must still stop on SIGTERM.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(exe->c_str(), cargv.data(), cenv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

std::optional<std::string> find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

ProcessResult run_process(const std::vector<std::string>& argv, const RunOptions& options) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("cannot create pipe for", argv.empty() ? "?" : argv[0], errno);
  pid_t pid;
  try {
    pid = spawn(argv, options, fds[1]);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);

  ProcessResult result;
  auto deadline = options.timeout ? std::chrono::steady_clock::now() + *options.timeout
                                  : std::chrono::steady_clock::time_point::max();
  char buf[8192];
  std::optional<std::chrono::steady_clock::time_point> kill_at;  // set once cancelled
  for (;;) {
    int wait_ms = -1;
    if (options.timeout) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        result.timed_out = true;
        ::kill(pid, SIGKILL);
        break;
      }
      wait_ms = static_cast<int>(left.count());
    }
    if (options.cancel != nullptr) {
      if (options.cancel->load() && !result.cancelled) {
        result.cancelled = true;
        ::kill(-pid, SIGTERM);  // its whole process group (spawn made it a leader): a wrapper's children too
        kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      }
      if (kill_at && std::chrono::steady_clock::now() >= *kill_at) {
        ::kill(-pid, SIGKILL);
        kill_at.reset();
      }
      if (wait_ms < 0 || wait_ms > 100) wait_ms = 100;
    }
    struct pollfd pfd {
      fds[0], POLLIN, 0
    };
    int rc = ::poll(&pfd, 1, wait_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) continue;
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = decode_status(status);
  return result;
}

ChildProcess ChildProcess::start(const std::vector<std::string>& argv, const std::string& log_path,
                                 const RunOptions& options) {
  int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("cannot open log file", log_path, errno);
  ChildProcess p;
  try {
    p.pid_ = spawn(argv, options, fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return p;
}

bool ChildProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = decode_status(status);
    pid_ = -1;
    return false;
  }
  return r == 0;
}

void ChildProcess::kill_now(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

int ChildProcess::wait() {
  if (pid_ <= 0) return exit_code_;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  exit_code_ = decode_status(status);
  pid_ = -1;
  return exit_code_;
}

int ChildProcess::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return exit_code_;
  ::kill(pid_, SIGCONT);  // a stopped (SIGSTOP) child cannot handle SIGTERM
  ::kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) return exit_code_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  return wait();
}

}  // namespace etcdadm

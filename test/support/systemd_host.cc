#include "test/support/systemd_host.h"

#include <signal.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "common/fs.h"
#include "test/support/test_env.h"

namespace etcdadm::test {
namespace {

constexpr long kCgroup2Magic = 0x63677270;  // CGROUP2_SUPER_MAGIC

std::string tree_link() { return std::filesystem::path(ETCDADM_BIN).parent_path() / "systemd-root"; }

bool is_cgroup2(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == kCgroup2Magic;
}

// Where this machine's unified cgroup hierarchy is: /sys/fs/cgroup itself, or its `unified`
// folder on a hybrid layout (the v1 controllers beside it stay the machine's).
std::string cgroup2_root() {
  if (is_cgroup2("/sys/fs/cgroup")) return "/sys/fs/cgroup";
  if (is_cgroup2("/sys/fs/cgroup/unified")) return "/sys/fs/cgroup/unified";
  return "";
}

// A cgroup and the ones systemd made inside it, deepest first (rmdir is the only way to remove
// one, and only once it has no children and no processes).
void remove_cgroup_tree(const std::string& top) {
  std::error_code ec;
  if (!std::filesystem::exists(top, ec)) return;
  std::vector<std::string> dirs = {top};
  for (auto it = std::filesystem::recursive_directory_iterator(top, ec); !ec && it != decltype(it)(); it.increment(ec)) {
    if (it->is_directory(ec)) dirs.push_back(it->path());
  }
  std::sort(dirs.begin(), dirs.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& d : dirs) ::rmdir(d.c_str());
}

// Cgroups of hosts whose test process is gone (killed -9 before its destructors ran).
void remove_abandoned_cgroups(const std::string& root) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename();
    if (name.rfind("etcdadm-test-", 0) != 0) continue;
    const std::string pid = name.substr(13, name.find('-', 13) - 13);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(std::stoi(pid), 0) != 0 && errno == ESRCH) remove_cgroup_tree(entry.path());
  }
}

}  // namespace

std::string SystemdHost::unavailable() {
  if (::geteuid() != 0) return "a systemd host needs root (namespaces, mounts, cgroups)";
  for (const char* tool : {"unshare", "nsenter", "chroot"}) {
    if (!find_executable(tool)) return std::string(tool) + " (util-linux, coreutils) is not installed";
  }
  if (cgroup2_root().empty()) return "this machine has no cgroup2 hierarchy for systemd";
  if (!path_exists(tree_link() + "/lib/systemd/systemd")) {
    return "no systemd root tree at " + tree_link() + ": run `bash scripts/systemd-root.sh " + ETCDADM_BIN + "`";
  }
  return "";
}

SystemdHost::SystemdHost(const std::string& dir, const std::string& name, const std::string& netns,
                         const std::vector<std::string>& shared_dirs)
    : dir_(dir), name_(name) {
  const std::string why = unavailable();
  if (!why.empty()) throw std::runtime_error(why);
  const std::string root = cgroup2_root();
  remove_abandoned_cgroups(root);
  cgroup_ = root + "/etcdadm-test-" + std::to_string(::getpid()) + "-" + name;
  make_dirs(dir_);
  std::vector<std::string> argv = {"bash", std::string(ETCDADM_SOURCE_DIR) + "/test/support/systemd_boot.sh",
                                   std::filesystem::canonical(tree_link()), dir_, name_, cgroup_, ETCDADM_BIN, netns};
  argv.insert(argv.end(), shared_dirs.begin(), shared_dirs.end());
  boot_ = ChildProcess::start(argv, dir_ + "/boot.log");

  // PID 1 is unshare's one child.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const std::string children = "/proc/" + std::to_string(boot_.pid()) + "/task/" + std::to_string(boot_.pid()) + "/children";
  while (init_pid_ <= 0) {
    const std::string listed = read_proc_file(children);
    if (!listed.empty() && read_proc_file("/proc/" + listed.substr(0, listed.find(' ')) + "/comm") == "systemd\n") {
      init_pid_ = std::stoi(listed);
    } else if (!boot_.running() || std::chrono::steady_clock::now() > deadline) {
      const std::string log = read_file(dir_ + "/boot.log");
      stop();
      throw std::runtime_error("systemd host " + name_ + " did not boot:\n" + log);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // "offline" (and no bus to ask) until systemd has started its manager, "starting" until the
  // boot's jobs are done, then "running", or "degraded" when a unit failed.
  std::string state;
  for (;;) {
    state = run({"systemctl", "is-system-running"}).output;
    if (state.rfind("running", 0) == 0) break;
    if (state.rfind("degraded", 0) == 0 || std::chrono::steady_clock::now() > deadline) {
      const std::string failed = run({"systemctl", "--failed", "--no-pager"}).output;
      stop();
      throw std::runtime_error("systemd host " + name_ + " is " + state + failed);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

SystemdHost::~SystemdHost() { stop(); }

ProcessResult SystemdHost::run(const std::vector<std::string>& argv, RunOptions options) const {
  std::vector<std::string> in = {"nsenter", "-t", std::to_string(init_pid_), "-m", "-u", "-i", "-p", "-C", "-n",
                                 "-r", "-w", "--"};
  in.insert(in.end(), argv.begin(), argv.end());
  options.env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  return run_process(in, options);
}

std::string SystemdHost::outside(const std::string& inside) const {
  return "/proc/" + std::to_string(init_pid_) + "/root" + inside;
}

std::string SystemdHost::unit_property(const std::string& unit, const std::string& property) const {
  std::string value = run({"systemctl", "show", unit, "-p", property, "--value"}).output;
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
  return value;
}

void SystemdHost::stop() {
  if (init_pid_ > 0) ::kill(init_pid_, SIGKILL);  // the kernel ends the rest of its pid namespace
  init_pid_ = -1;
  if (boot_.pid() > 0 && boot_.running()) boot_.stop(std::chrono::milliseconds(5000));
  if (!cgroup_.empty()) {
    // The processes leave the cgroups as the kernel reaps them: a moment after PID 1 died.
    for (int i = 0; i < 50 && path_exists(cgroup_); ++i) {
      remove_cgroup_tree(cgroup_);
      if (path_exists(cgroup_)) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    cgroup_.clear();
  }
}

}  // namespace etcdadm::test

#include "etcdadm/init_system.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "common/error.h"
#include "common/file_users.h"
#include "common/fs.h"
#include "common/subprocess.h"

namespace etcdadm {

namespace stdfs = std::filesystem;

namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// systemd unit text

// A value in a unit file must stay on its line; '%' starts a specifier in every directive we
// write, so it is doubled.
std::string unit_value(const std::string& value, const char* what) {
  if (value.find_first_of("\r\n") != std::string::npos) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + " contains a line break: " + value);
  }
  std::string out;
  for (char c : value) {
    if (c == '%') out += '%';
    out += c;
  }
  return out;
}

// ExecStart= and RequiresMountsFor= split on whitespace and honour quotes and backslashes (and
// ExecStart= expands $VARS): a path with any of those is quoted, and for ExecStart= '$' doubled.
std::string unit_quoted_path(const std::string& path, const char* what, bool exec) {
  std::string v = unit_value(path, what);
  std::string escaped;
  bool quote = false;
  for (char c : v) {
    if (exec && c == '$') escaped += '$';
    if (c == '"' || c == '\\') escaped += '\\';
    if (c == ' ' || c == '\t' || c == '"' || c == '\\' || c == '\'') quote = true;
    escaped += c;
  }
  return quote ? "\"" + escaped + "\"" : escaped;
}

std::string unit_exec_path(const std::string& path) { return unit_quoted_path(path, "the etcd binary path", true); }

bool systemd_running() { return path_exists("/run/systemd/system") && find_executable("systemctl").has_value(); }

std::string unit_name(const MemberConfig& config) { return config.service_name + ".service"; }

// Runs `systemctl <args...>` (the result is the caller's to judge).
ProcessResult systemctl(std::vector<std::string> args, std::optional<milliseconds> timeout = std::nullopt) {
  args.insert(args.begin(), "systemctl");
  RunOptions options;
  options.timeout = timeout;
  return run_process(args, options);
}

// A failed systemctl call as a kExternalTool error pointing at the journal.
void require_ok(const MemberConfig& config, const std::string& what, const ProcessResult& r) {
  if (r.exit_code == 0 && !r.timed_out) return;
  throw Error(ErrorKind::kExternalTool,
              "systemctl " + what +
                  (r.timed_out ? " timed out" : " failed (exit " + std::to_string(r.exit_code) + ")") +
                  (r.output.empty() ? "" : ": " + r.output),
              "see `systemctl status " + unit_name(config) + "` and `journalctl -u " + unit_name(config) + "`");
}

void systemctl_checked(const MemberConfig& config, const std::string& verb) {
  require_ok(config, verb + " " + unit_name(config), systemctl({verb, unit_name(config)}));
}

// ---------------------------------------------------------------------------------------------
// kubelet manifest text

// A YAML double-quoted scalar: backslash and quote escaped, control characters as \xNN.
std::string yaml_quote(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// ---------------------------------------------------------------------------------------------
// processes

struct ProcStat {
  char state = '?';
  unsigned long long start_time = 0;  // clock ticks since boot: tells a recycled pid apart
};

// /proc/<pid>/stat, or nullopt when there is no such process.
std::optional<ProcStat> read_proc_stat(int pid) {
  std::string text;
  try {
    text = read_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (const Error&) {
    return std::nullopt;
  }
  // "pid (comm) S ppid ..." where comm may hold spaces and parentheses: fields follow the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::vector<std::string> fields;
  size_t pos = close + 1;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(" \n", pos);
    if (start == std::string::npos) break;
    size_t end = text.find_first_of(" \n", start);
    if (end == std::string::npos) end = text.size();
    fields.push_back(text.substr(start, end - start));
    pos = end;
  }
  // fields[0] is field 3 (state); starttime is field 22.
  if (fields.size() < 20 || fields[0].empty()) return std::nullopt;
  ProcStat st;
  st.state = fields[0][0];
  st.start_time = std::strtoull(fields[19].c_str(), nullptr, 10);
  return st;
}

// Alive = exists and is not a zombie (a dead daemon whose parent has not reaped it yet).
bool alive(const ProcStat& st) { return st.state != 'Z' && st.state != 'X'; }

// Threads of `pid` still listed in /proc (the main thread included; 0 when it is gone).
size_t listed_threads(int pid) {
  std::error_code ec;
  size_t n = 0;
  for (stdfs::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  return n;
}

// Still the same process as `original` (same start time, so not a recycled pid), and not wholly
// exited. A multi-threaded process (etcd, a Go program) killed by SIGKILL shows its main thread as a
// zombie while its other threads are still exiting and holding its files: etcd's WAL and db locks
// are released only when the last thread is gone, so until then it still counts as running.
bool same_process_alive(int pid, const ProcStat& original) {
  auto now = read_proc_stat(pid);
  if (!now || now->start_time != original.start_time) return false;
  return alive(*now) || listed_threads(pid) > 1;
}

std::string resolved_path(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) != nullptr) return buf;
  return absolute_path(path);
}

bool exe_matches(int pid, const std::string& expected_exe) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof buf - 1);
  if (n < 0) return false;  // gone, a zombie, or another user's process we cannot inspect
  std::string exe(buf, static_cast<size_t>(n));
  // The binary was replaced (upgrade) while the process kept running from the old inode.
  static const std::string deleted = " (deleted)";
  if (exe.size() > deleted.size() && exe.compare(exe.size() - deleted.size(), deleted.size(), deleted) == 0) {
    exe.resize(exe.size() - deleted.size());
  }
  return exe == resolved_path(expected_exe) || exe == absolute_path(expected_exe);
}

// The last `max_lines` lines of a (possibly large, appended-to) log file.
std::string log_tail(const std::string& path, size_t max_lines) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "(no log)";
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0) {
    off_t size = st.st_size;
    off_t from = size > 16384 ? size - 16384 : 0;
    text.resize(static_cast<size_t>(size - from));
    ssize_t n = ::pread(fd, text.data(), text.size(), from);
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  ::close(fd);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.empty()) return "(the log is empty)";
  size_t pos = text.size();
  for (size_t lines = 0; lines < max_lines && pos != std::string::npos && pos > 0; ++lines) {
    pos = text.rfind('\n', pos - 1);
  }
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

// What the intermediate and the daemon report to the parent through the CLOEXEC pipe.
struct StartMessage {
  int32_t tag;    // 'P' daemon pid, 'S' setsid failed, 'F' fork failed, 'C' chdir failed, 'E' exec failed
  int32_t value;  // pid or errno
};

// Only async-signal-safe calls from here on in the children (the parent may have threads).
void report(int fd, char tag, int value) {
  StartMessage m{tag, value};
  ssize_t rc;
  do {
    rc = ::write(fd, &m, sizeof m);  // <= PIPE_BUF: atomic, never interleaved
  } while (rc < 0 && errno == EINTR);
}

void close_fds_except(int keep) {
  auto k = static_cast<unsigned>(keep);  // keep >= 3 (above_stdio)
  if ((k == 3 || ::close_range(3, k - 1, 0) == 0) && ::close_range(k + 1, ~0U, 0) == 0) return;
  long max = ::sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (int fd = 3; fd < max; ++fd) {
    if (fd != keep) ::close(fd);
  }
}

[[noreturn]] void exec_daemon(const char* path, char* const argv[], char* const envp[], int devnull, int log_fd,
                              int report_fd) {
  if (::chdir("/") != 0) {
    report(report_fd, 'C', errno);
    _exit(127);
  }
  ::dup2(devnull, 0);
  ::dup2(log_fd, 1);
  ::dup2(log_fd, 2);
  close_fds_except(report_fd);
  // Ignored signals and the blocked mask survive exec: etcd must see SIGTERM whatever we did.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(path, argv, envp);
  report(report_fd, 'E', errno);
  _exit(127);
}

// An fd that is not 0, 1 or 2 (those are about to be replaced in the daemon), CLOEXEC.
int above_stdio(int fd) {
  if (fd > 2) return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  int err = errno;
  ::close(fd);
  if (moved < 0) throw_errno("cannot duplicate descriptor", std::to_string(fd), err);
  return moved;
}

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

std::string errno_text(int err) { return std::strerror(err); }

// ---------------------------------------------------------------------------------------------
// the three init systems

// What output_since() returns at most: the end of etcd's output, where it says why it stopped.
constexpr size_t kOutputLimit = 1 << 20;

[[noreturn]] void throw_systemd_not_running() {
  throw Error(ErrorKind::kUnavailable, "systemd is not running on this host",
              "use --init-system process (etcdadm runs etcd itself) or kubelet");
}

class SystemdInitSystem : public InitSystem {
 public:
  InitSystemKind kind() const override { return InitSystemKind::kSystemd; }

  void check_usable() const override {
    if (!systemd_running()) throw_systemd_not_running();
  }

  std::vector<std::string> configure(const MemberConfig& config) override {
    std::string path = systemd_unit_path(config);
    make_dirs(parent_dir(path));
    write_file_atomic(path, render_systemd_unit(config), 0644);
    spdlog::info("wrote systemd unit {}", path);
    return {path};
  }

  void start(const MemberConfig& config) override {
    if (!systemd_running()) {
      throw_systemd_not_running();
    }
    std::string path = systemd_unit_path(config);
    if (!path_exists(path)) {
      throw Error(ErrorKind::kNotFound, "systemd unit " + path + " does not exist",
                  "write it first (the configure phase of etcdadm init/join)");
    }
    require_ok(config, "daemon-reload", systemctl({"daemon-reload"}));
    systemctl_checked(config, "enable");
    // Type=notify: this returns once etcd told systemd it is ready (or failed, or TimeoutStartSec passed).
    systemctl_checked(config, "restart");
    spdlog::info("started {}", unit_name(config));
  }

  void stop(const MemberConfig& config, milliseconds grace) override {
    if (!systemd_running()) return;
    auto r = systemctl({"stop", unit_name(config)}, grace + milliseconds(5000));
    if (r.timed_out) {
      // systemd's own TimeoutStopSec is longer than our grace: kill it, then wait for the stop job.
      spdlog::warn("{} did not stop within {} ms; killing it", unit_name(config), grace.count());
      systemctl({"kill", "--signal=SIGKILL", unit_name(config)});
      r = systemctl({"stop", unit_name(config)});
    }
    // Idempotent: a unit systemd does not know (never started, or already removed) is stopped.
    if (r.output.find("not loaded") == std::string::npos) require_ok(config, "stop " + unit_name(config), r);
    if (path_exists(systemd_unit_path(config))) systemctl_checked(config, "disable");
  }

  bool running(const MemberConfig& config) override {
    if (!systemd_running()) return false;
    return systemctl({"is-active", "--quiet", unit_name(config)}).exit_code == 0;
  }

  std::vector<std::string> files(const MemberConfig& config) const override { return {systemd_unit_path(config)}; }

  std::string output_mark(const MemberConfig&) override {
    return "@" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
  }
  std::string output_since(const MemberConfig& config, const std::string& mark) override {
    if (mark.empty() || !systemd_running()) return "";
    RunOptions options;
    options.timeout = milliseconds(10000);
    auto r = run_process(
        {"journalctl", "-u", unit_name(config), "--since", mark, "-o", "cat", "--no-pager", "-n", "2000"}, options);
    if (r.exit_code != 0) return "";
    return r.output.size() > kOutputLimit ? r.output.substr(r.output.size() - kOutputLimit) : r.output;
  }
};

class KubeletInitSystem : public InitSystem {
 public:
  InitSystemKind kind() const override { return InitSystemKind::kKubelet; }

  std::vector<std::string> configure(const MemberConfig& config) override {
    EnvVars env = parse_env_file(read_file(config.env_file()));
    std::string path = kubelet_manifest_path(config);
    make_dirs(config.kubelet_manifest_dir);
    // 0600 like kubeadm's manifests: only the kubelet (root) needs to read it.
    write_file_atomic(path, render_kubelet_manifest(config, env), 0600);
    remove_all(stopped_kubelet_manifest_path(config));  // superseded
    spdlog::info("wrote static pod manifest {}; the kubelet starts the pod", path);
    return {path};
  }

  // Written again from the env file (what changed while etcd was stopped, a forced new cluster
  // included, reaches the pod); the manifest a stop moved aside goes back only where there is no
  // env file to write it from.
  void start(const MemberConfig& config) override {
    std::string path = kubelet_manifest_path(config);
    const std::string stopped = stopped_kubelet_manifest_path(config);
    if (path_exists(path)) {
      spdlog::info("static pod manifest {} is in place; the kubelet runs etcd from it", path);
      return;
    }
    if (path_exists(config.env_file())) {
      configure(config);
      return;
    }
    if (path_exists(stopped)) {
      rename_durably(stopped, path);
      spdlog::info("moved {} back to {}; the kubelet starts the pod", stopped, path);
      return;
    }
    throw Error(ErrorKind::kNotFound, "static pod manifest " + path + " does not exist",
                "write it first (the configure phase of etcdadm init/join)");
  }

  // The kubelet stops the pod once the manifest is gone from its directory, in its own time: the
  // manifest is moved beside the directory and the stop returns once no process holds the member's
  // data any more, so that what follows (a data dir set aside, a restore) never races a running
  // etcd. A manifest found moved aside already (a stop killed while it waited) is waited for the
  // same way. If etcd does not stop, the manifest goes back and nothing changed.
  void stop(const MemberConfig& config, milliseconds grace) override {
    std::string path = kubelet_manifest_path(config);
    const std::string stopped = stopped_kubelet_manifest_path(config);
    if (path_exists(path)) {
      rename_durably(path, stopped);
      spdlog::info("moved static pod manifest {} to {}; the kubelet stops the pod", path, stopped);
    } else if (!path_exists(stopped)) {
      return;
    }
    // The kubelet's own grace for a pod's containers (30 s by default) comes on top of the time it
    // takes to notice the manifest has gone.
    const auto wait = grace + std::chrono::seconds(60);
    if (!wait_until_released(config.data_dir, std::chrono::duration_cast<milliseconds>(wait))) {
      const std::string holders = holders_of(config.data_dir);
      rename_durably(stopped, path);
      throw Error(ErrorKind::kTimeout,
                  "etcd did not stop within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(wait).count()) +
                      " s of its manifest leaving " + config.kubelet_manifest_dir + " (" + holders +
                      " still hold files in " + config.data_dir + "); the manifest is back",
                  "is the kubelet running, and is that its static pod directory?");
    }
  }

  // While a stop waits for etcd to let go, the member is taken as running.
  bool running(const MemberConfig& config) override {
    return path_exists(kubelet_manifest_path(config)) ||
           (path_exists(stopped_kubelet_manifest_path(config)) && !processes_holding(config.data_dir).empty());
  }

  std::vector<std::string> files(const MemberConfig& config) const override {
    return {kubelet_manifest_path(config), stopped_kubelet_manifest_path(config)};
  }
};

class ProcessInitSystem : public InitSystem {
 public:
  InitSystemKind kind() const override { return InitSystemKind::kProcess; }

  // Nothing to write: the env file is all the process needs.
  std::vector<std::string> configure(const MemberConfig&) override { return {}; }

  void start(const MemberConfig& config) override {
    if (int pid = running_pid(config.pid_file(), config.etcd_binary()); pid != 0) {
      spdlog::info("{} is already running, pid {}", config.service_name, pid);
      return;
    }
    EnvVars env = parse_env_file(read_file(config.env_file()));
    int pid = start_detached({config.etcd_binary()}, env, config.log_file(), config.pid_file());
    spdlog::info("started {} (pid {}, log {})", config.service_name, pid, config.log_file());
  }

  void stop(const MemberConfig& config, milliseconds grace) override {
    stop_pid_file(config.pid_file(), config.etcd_binary(), grace);
  }

  bool running(const MemberConfig& config) override {
    return running_pid(config.pid_file(), config.etcd_binary()) != 0;
  }

  std::string output_mark(const MemberConfig& config) override {
    struct stat st {};
    return std::to_string(::stat(config.log_file().c_str(), &st) == 0 ? st.st_size : 0);
  }
  std::string output_since(const MemberConfig& config, const std::string& mark) override {
    uint64_t from = 0;
    try {
      from = std::stoull(mark);
    } catch (const std::exception&) {
      return "";
    }
    std::ifstream log(config.log_file(), std::ios::binary | std::ios::ate);
    if (!log) return "";
    const uint64_t size = static_cast<uint64_t>(log.tellg());
    if (from > size) from = 0;  // the log was rotated or truncated since
    from = std::max<uint64_t>(from, size > kOutputLimit ? size - kOutputLimit : 0);
    std::string out(size - from, '\0');
    log.seekg(static_cast<std::streamoff>(from));
    log.read(out.data(), static_cast<std::streamsize>(out.size()));
    out.resize(static_cast<size_t>(log.gcount()));
    return out;
  }

  // The log file too, so that reset leaves nothing behind.
  std::vector<std::string> files(const MemberConfig& config) const override {
    return {config.pid_file(), config.log_file()};
  }
};

}  // namespace

std::unique_ptr<InitSystem> make_init_system(InitSystemKind kind) {
  switch (kind) {
    case InitSystemKind::kSystemd:
      return std::make_unique<SystemdInitSystem>();
    case InitSystemKind::kKubelet:
      return std::make_unique<KubeletInitSystem>();
    case InitSystemKind::kProcess:
      return std::make_unique<ProcessInitSystem>();
  }
  throw Error(ErrorKind::kInternal, "unknown init system");
}

std::string render_systemd_unit(const MemberConfig& config) {
  // TimeoutStartSec: a member waiting for its peers (or receiving a large snapshot when joining)
  // is not ready for a while; systemd's default 90 s would kill it in the middle.
  // RequiresMountsFor: etcd never starts on the empty directory under a data volume mounted late
  // (it would make a new member there, or refuse and count as lost).
  static constexpr const char* kUnit = R"([Unit]
Description=etcd ({service}, managed by etcdadm)
Documentation=https://etcd.io/docs/
After=network-online.target
Wants=network-online.target
RequiresMountsFor={data_dir}

[Service]
Type=notify
EnvironmentFile={env_file}
ExecStart={exec}
Restart=on-failure
RestartSec=5s
LimitNOFILE=65536
{priorities}TimeoutStartSec=300

[Install]
WantedBy=multi-user.target
)";
  return fmt::format(
      kUnit, fmt::arg("service", unit_value(config.service_name, "the service name")),
      fmt::arg("env_file", unit_value(config.env_file(), "the env file path")),
      fmt::arg("data_dir", unit_quoted_path(config.data_dir, "the data dir", false)),
      fmt::arg("exec", unit_exec_path(config.etcd_binary())),
      fmt::arg("priorities",
               config.disk_priorities ? "Nice=-10\nIOSchedulingClass=best-effort\nIOSchedulingPriority=2\n" : ""));
}

std::string systemd_unit_path(const MemberConfig& config) {
  const char* dir = std::getenv("ETCDADM_SYSTEMD_DIR");
  std::string base = dir != nullptr && *dir != '\0' ? dir : "/etc/systemd/system";
  return base + "/" + unit_name(config);
}

std::string render_kubelet_manifest(const MemberConfig& config, const EnvVars& env) {
  static constexpr const char* kPod =
      R"(# Static pod written by etcdadm from the env file in the config dir below (etcdadm.io/config-dir).
# kubeadm join --control-plane finds etcd's members by kubeadm's annotation, kept here.
apiVersion: "v1"
kind: "Pod"
metadata:
  name: {name}
  namespace: "kube-system"
  labels:
    component: "etcd"
    tier: "control-plane"
  annotations:
    etcdadm.io/config-dir: {config_dir}
    kubeadm.kubernetes.io/etcd.advertise-client-urls: {client_url}
spec:
  hostNetwork: true
  priorityClassName: "system-node-critical"
  containers:
    - name: "etcd"
      image: {image}
      command:
        - "etcd"
{env}      volumeMounts:
        - name: "etcd-data"
          mountPath: {data_dir}
        - name: "etcd-certs"
          mountPath: {certs_dir}
          readOnly: true
  volumes:
    - name: "etcd-data"
      hostPath:
        path: {data_dir}
        type: "DirectoryOrCreate"
    - name: "etcd-certs"
      hostPath:
        path: {certs_dir}
        type: "Directory"
)";
  std::string env_yaml = env.empty() ? "      env: []\n" : "      env:\n";
  for (const auto& [name, value] : env) {
    env_yaml += "        - name: " + yaml_quote(name) + "\n          value: " + yaml_quote(value) + "\n";
  }
  return fmt::format(
      kPod,
      fmt::arg("name", yaml_quote(config.pod_name.empty() ? config.service_name + "-" + config.name : config.pod_name)),
      fmt::arg("config_dir", yaml_quote(config.config_dir)), fmt::arg("client_url", yaml_quote(config.client_url())),
      fmt::arg("image", yaml_quote(config.image())), fmt::arg("env", env_yaml),
      fmt::arg("data_dir", yaml_quote(config.data_dir)), fmt::arg("certs_dir", yaml_quote(config.certs_dir)));
}

std::string kubelet_manifest_path(const MemberConfig& config) {
  return config.kubelet_manifest_dir + "/" + config.service_name + ".yaml";
}

std::string stopped_kubelet_manifest_path(const MemberConfig& config) {
  std::filesystem::path dir = std::filesystem::path(config.kubelet_manifest_dir).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();  // "/etc/kubernetes/manifests/"
  return (dir.parent_path() / (config.service_name + ".yaml.etcdadm-stopped")).string();
}

int start_detached(const std::vector<std::string>& argv, const EnvVars& env, const std::string& log_file,
                   const std::string& pid_file) {
  if (argv.empty()) throw Error(ErrorKind::kInternal, "start_detached with an empty argv");
  auto exe = find_executable(argv[0]);
  if (!exe) {
    throw Error(ErrorKind::kNotFound, "cannot start " + argv[0] + ": no such executable",
                "check the install dir (etcdadm init phase install puts etcd there)");
  }

  // Everything the children need is prepared here: after fork only async-signal-safe calls.
  std::vector<std::string> env_strings;
  auto inherited = [&](const char* name, const char* fallback) {
    for (const auto& kv : env) {
      if (kv.first == name) return;
    }
    const char* v = std::getenv(name);
    if (v == nullptr) v = fallback;
    if (v != nullptr) env_strings.push_back(std::string(name) + "=" + v);
  };
  inherited("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  inherited("HOME", nullptr);
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int raw_log = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (raw_log < 0) throw_errno("cannot open log file", log_file, errno);
  Fd log_fd(above_stdio(raw_log));
  int raw_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (raw_null < 0) throw_errno("cannot open", "/dev/null", errno);
  Fd devnull(above_stdio(raw_null));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("cannot create a pipe for", argv[0], errno);
  Fd read_end(fds[0]);
  Fd write_end(above_stdio(fds[1]));

  // Double fork: the intermediate child starts a new session and exits at once, so the daemon is
  // re-parented to init and never becomes our zombie.
  pid_t child = ::fork();
  if (child < 0) throw_errno("cannot fork to start", argv[0], errno);
  if (child == 0) {
    if (::setsid() < 0) {
      report(write_end.fd, 'S', errno);
      _exit(1);
    }
    pid_t daemon = ::fork();
    if (daemon < 0) {
      report(write_end.fd, 'F', errno);
      _exit(1);
    }
    if (daemon == 0) exec_daemon(exe->c_str(), cargv.data(), cenv.data(), devnull.fd, log_fd.fd, write_end.fd);
    report(write_end.fd, 'P', daemon);
    _exit(0);
  }
  write_end.reset();
  devnull.reset();
  log_fd.reset();

  // Read until EOF: the intermediate has exited and the daemon has exec'd (CLOEXEC) or failed.
  std::vector<StartMessage> messages;
  StartMessage m{};
  size_t got = 0;
  for (;;) {
    ssize_t n = ::read(read_end.fd, reinterpret_cast<char*>(&m) + got, sizeof m - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
    if (got == sizeof m) {
      messages.push_back(m);
      got = 0;
    }
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }

  int pid = 0;
  for (const auto& msg : messages) {
    if (msg.tag == 'P') pid = msg.value;
  }
  for (const auto& msg : messages) {
    switch (msg.tag) {
      case 'S':
        throw Error(ErrorKind::kInternal, "setsid failed: " + errno_text(msg.value));
      case 'F':
        throw_errno("cannot fork to start", argv[0], msg.value);
      case 'C':
        throw_errno("cannot change directory to", "/", msg.value);
      case 'E':
        if (msg.value == ENOENT || msg.value == ENOEXEC || msg.value == EACCES) {
          throw Error(ErrorKind::kExternalTool, "cannot execute " + *exe + ": " + errno_text(msg.value),
                      "check that it is an executable for this machine");
        }
        throw Error(ErrorKind::kExternalTool, "cannot execute " + *exe + ": " + errno_text(msg.value));
      default:
        break;
    }
  }
  if (pid <= 0) throw Error(ErrorKind::kInternal, "starting " + argv[0] + " reported no pid");

  try {
    write_file_atomic(pid_file, std::to_string(pid) + "\n", 0644);
  } catch (...) {
    ::kill(pid, SIGKILL);  // an untracked daemon could never be stopped by us
    throw;
  }

  // A daemon that dies at once (bad flag, port in use, unreadable cert) is reported here with
  // what it said, instead of as a health-check timeout later.
  std::this_thread::sleep_for(milliseconds(200));
  auto st = read_proc_stat(pid);
  if (!st || !alive(*st)) {
    remove_all(pid_file);
    throw Error(ErrorKind::kExternalTool,
                argv[0] + " exited right after starting; the end of " + log_file + ":\n" + log_tail(log_file, 20),
                "fix what the log says, then start again");
  }
  return pid;
}

int running_pid(const std::string& pid_file, const std::string& expected_exe) {
  std::string text;
  try {
    text = read_file(pid_file);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound) return 0;
    throw;
  }
  char* end = nullptr;
  long pid = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || pid <= 0 || pid > INT32_MAX) {
    spdlog::warn("ignoring pid file {}: no pid in it", pid_file);
    return 0;
  }
  auto st = read_proc_stat(static_cast<int>(pid));
  if (!st || !alive(*st)) return 0;
  if (!exe_matches(static_cast<int>(pid), expected_exe)) {
    spdlog::debug("pid {} from {} is not {} (stale pid file)", pid, pid_file, expected_exe);
    return 0;
  }
  return static_cast<int>(pid);
}

void stop_pid_file(const std::string& pid_file, const std::string& expected_exe, milliseconds grace) {
  int pid = running_pid(pid_file, expected_exe);
  auto original = pid != 0 ? read_proc_stat(pid) : std::nullopt;
  if (!original) {
    remove_all(pid_file);  // stale or absent: nothing of ours runs
    return;
  }
  auto wait_gone = [&](milliseconds limit) {
    auto deadline = steady_clock::now() + limit;
    while (same_process_alive(pid, *original)) {
      if (steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return true;
  };
  spdlog::info("stopping pid {} ({})", pid, expected_exe);
  ::kill(pid, SIGTERM);
  ::kill(pid, SIGCONT);  // a stopped process cannot act on SIGTERM
  if (!wait_gone(grace)) {
    spdlog::warn("pid {} did not exit within {} ms of SIGTERM; killing it", pid, grace.count());
    if (same_process_alive(pid, *original)) ::kill(pid, SIGKILL);
    if (!wait_gone(milliseconds(10000))) {
      throw Error(
          ErrorKind::kTimeout,
          "pid " + std::to_string(pid) + " (" + expected_exe + ") is still there 10 s after SIGKILL",
          "it is probably stuck in the kernel (disk I/O); check `ps -o stat,wchan -p " + std::to_string(pid) + "`");
    }
  }
  remove_all(pid_file);
}

bool refused_on_inconsistent_data(const std::string& output) {
  return output.find("found data inconsistency with peers") != std::string::npos;
}

}  // namespace etcdadm

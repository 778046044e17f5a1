// The init systems. Unit and manifest text are checked with independent oracles (systemd-analyze
// verify, a YAML parser); the process init system runs real programs (sleep, sh, etcd) and the
// checks read /proc directly. Every process a test starts is killed by pid in a guard.
#include "etcdadm/init_system.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "common/error.h"
#include "common/file_users.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "etcdadm/member_config.h"
#include "test/support/reaper.h"
#include "test/support/test_env.h"
#include "test/support/skips.h"

namespace etcdadm {
namespace {

using namespace std::chrono_literals;
namespace stdfs = std::filesystem;

// ---- helpers: /proc read directly, not through the code under test ----

std::string exe_of(int pid) {
  std::error_code ec;
  auto target = stdfs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  return ec ? "" : target.string();
}

// Gone: no such process, or a zombie nobody reaped yet.
bool gone(int pid) {
  std::string stat;
  try {
    stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (const Error&) {
    return true;
  }
  auto close = stat.rfind(')');
  return close == std::string::npos || stat.substr(close + 2, 1) == "Z";
}

std::map<std::string, std::string> environ_of(int pid) {
  std::string raw = read_file("/proc/" + std::to_string(pid) + "/environ");
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t end = raw.find('\0', pos);
    if (end == std::string::npos) end = raw.size();
    std::string kv = raw.substr(pos, end - pos);
    out[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    pos = end + 1;
  }
  return out;
}

// The "Name:\tvalue" line of /proc/<pid>/status.
std::string status_field(int pid, const std::string& name) {
  std::string status = read_file("/proc/" + std::to_string(pid) + "/status");
  auto at = status.find("\n" + name + ":");
  if (at == std::string::npos) return "";
  auto start = status.find_first_not_of(" \t", at + name.size() + 2);
  return status.substr(start, status.find('\n', start) - start);
}

// SIGKILLs the watched process when the test ends, if it is still the same program.
class ProcessGuard {
 public:
  ProcessGuard() = default;
  explicit ProcessGuard(int pid) { watch(pid); }
  ~ProcessGuard() {
    if (pid_ > 0 && !exe_.empty() && exe_of(pid_) == exe_) ::kill(pid_, SIGKILL);
  }
  ProcessGuard(const ProcessGuard&) = delete;
  ProcessGuard& operator=(const ProcessGuard&) = delete;
  void watch(int pid) {
    pid_ = pid;
    exe_ = exe_of(pid);
  }

 private:
  int pid_ = 0;
  std::string exe_;
};

// Sets (or unsets, with nullopt) a variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) {
      ::setenv(name_.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

int read_pid_file(const std::string& path) { return std::stoi(read_file(path)); }

MemberConfig member(const std::string& root) {
  MemberConfig c;
  c.name = "m1";
  c.version = "3.5.17";
  c.install_dir = root + "/bin";
  c.certs_dir = root + "/pki";
  c.data_dir = root + "/data";
  c.config_dir = root + "/conf";
  c.bind_address = "127.0.0.1";
  c.service_name = "etcd-test";
  c.kubelet_manifest_dir = root + "/manifests";
  return c;
}

// ---- systemd ----

TEST(SystemdUnit, KnownAnswer) {
  MemberConfig c;
  c.install_dir = "/opt/etcd/bin";
  c.config_dir = "/etc/etcd-a";
  c.service_name = "etcd-a";
  EXPECT_EQ(render_systemd_unit(c),
            "[Unit]\n"
            "Description=etcd (etcd-a, managed by etcdadm)\n"
            "Documentation=https://etcd.io/docs/\n"
            "After=network-online.target\n"
            "Wants=network-online.target\n"
            "RequiresMountsFor=/var/lib/etcd\n"
            "\n"
            "[Service]\n"
            "Type=notify\n"
            "EnvironmentFile=/etc/etcd-a/etcd.env\n"
            "ExecStart=/opt/etcd/bin/etcd\n"
            "Restart=on-failure\n"
            "RestartSec=5s\n"
            "LimitNOFILE=65536\n"
            "Nice=-10\n"
            "IOSchedulingClass=best-effort\n"
            "IOSchedulingPriority=2\n"
            "TimeoutStartSec=300\n"
            "\n"
            "[Install]\n"
            "WantedBy=multi-user.target\n");
  c.disk_priorities = false;
  std::string plain = render_systemd_unit(c);
  for (const char* absent : {"Nice=", "IOSchedulingClass=", "IOSchedulingPriority="}) {
    EXPECT_EQ(plain.find(absent), std::string::npos) << absent;
  }
  for (const char* present : {"\nType=notify\n", "\nEnvironmentFile=/etc/etcd-a/etcd.env\n",
                              "\nExecStart=/opt/etcd/bin/etcd\n", "\nWantedBy=multi-user.target\n"}) {
    EXPECT_NE(plain.find(present), std::string::npos) << present;
  }
  EXPECT_EQ(systemd_unit_path(c).substr(systemd_unit_path(c).rfind('/')), "/etcd-a.service");
}

TEST(SystemdUnit, PathsAreEscapedForSystemd) {
  MemberConfig c;
  c.install_dir = "/opt/my etcd%i";
  c.config_dir = "/etc/etcd%n";
  c.data_dir = "/var/lib/my etcd$1";
  std::string unit = render_systemd_unit(c);
  EXPECT_NE(unit.find("\nRequiresMountsFor=\"/var/lib/my etcd$1\"\n"), std::string::npos) << unit;
  EXPECT_NE(unit.find("\nExecStart=\"/opt/my etcd%%i/etcd\"\n"), std::string::npos) << unit;
  EXPECT_NE(unit.find("\nEnvironmentFile=/etc/etcd%%n/etcd.env\n"), std::string::npos) << unit;
  // A line break would inject directives: refused.
  c.service_name = "etcd\nExecStartPre=/bin/evil";
  EXPECT_THROW(render_systemd_unit(c), Error);
}

TEST(SystemdInitSystem, ConfigureWritesTheUnitAndStartNeedsSystemd) {
  test::TempDir dir;
  ScopedEnv units("ETCDADM_SYSTEMD_DIR", dir / "units");
  MemberConfig c = member(dir.path());
  auto init = make_init_system(InitSystemKind::kSystemd);
  EXPECT_EQ(init->kind(), InitSystemKind::kSystemd);
  std::string path = dir / "units/etcd-test.service";
  EXPECT_EQ(systemd_unit_path(c), path);
  EXPECT_EQ(init->configure(c), std::vector<std::string>{path});
  EXPECT_EQ(read_file(path), render_systemd_unit(c));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(init->files(c), std::vector<std::string>{path});
  if (path_exists("/run/systemd/system")) ETCDADM_SKIP_OUTSIDE_CI() << "systemd runs here: not touching real units";
  try {
    init->start(c);
    FAIL() << "start without systemd succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("systemd is not running"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("--init-system process"), std::string::npos) << e.hint();
  }
  EXPECT_NO_THROW(init->stop(c, 1s));
  EXPECT_FALSE(init->running(c));
}

// systemd-analyze verify, with the binary and env file present (it checks ExecStart is executable).
class SystemdAnalyze : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_executable("systemd-analyze")) ETCDADM_SKIP_OUTSIDE_CI() << "systemd-analyze is not installed";
    if (!path_exists("/usr/bin/etcd")) ETCDADM_SKIP_OUTSIDE_CI() << "/usr/bin/etcd is not installed";
    // A space and a '%' in the install dir: the unit's quoting and escaping must survive systemd.
    config_ = member(dir_.path());
    config_.install_dir = dir_ / "opt bin%1";
    make_dirs(config_.install_dir);
    stdfs::create_symlink("/usr/bin/etcd", config_.etcd_binary());
    make_dirs(config_.config_dir);
    write_file_atomic(config_.env_file(), "ETCD_NAME=m1\n", 0600);
    make_dirs(dir_ / "units");
  }

  // Exit code and output of `systemd-analyze verify` on `unit` saved as etcd-test.service.
  ProcessResult verify(const std::string& unit) {
    std::string path = dir_ / "units/etcd-test.service";
    write_file_atomic(path, unit);
    return run_process({"systemd-analyze", "verify", path});
  }

  test::TempDir dir_;
  MemberConfig config_;
};

TEST_F(SystemdAnalyze, GeneratedUnitVerifies) {
  for (bool priorities : {true, false}) {
    config_.disk_priorities = priorities;
    auto r = verify(render_systemd_unit(config_));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (const char* bad : {"Unknown", "rror", "Failed", "ignoring", "not executable"}) {
      EXPECT_EQ(r.output.find(bad), std::string::npos) << bad << " in:\n" << r.output;
    }
  }
}

TEST_F(SystemdAnalyze, BrokenUnitsAreReported) {
  std::string good = render_systemd_unit(config_);
  std::string typo = good;
  typo.replace(typo.find("RestartSec="), 11, "RestartSecs=");
  EXPECT_NE(verify(typo).output.find("Unknown key"), std::string::npos);
  std::string bad_type = good;
  bad_type.replace(bad_type.find("Type=notify"), 11, "Type=notifyy");
  EXPECT_NE(verify(bad_type).output.find("Failed to parse"), std::string::npos);
  // The ExecStart path as systemd reads it (unquoted, unescaped) must be the binary: remove it.
  stdfs::remove(config_.etcd_binary());
  auto missing = verify(good);
  EXPECT_NE(missing.exit_code, 0) << missing.output;
  EXPECT_NE(missing.output.find("opt bin%1/etcd"), std::string::npos) << missing.output;
}

// ---- kubelet ----

nlohmann::json parse_yaml(const std::string& path) {
  auto r = run_process(
      {"python3", "-c", "import yaml,json,sys; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))", path});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output);
}

TEST(KubeletManifest, ParsesAsTheExpectedPod) {
  test::TempDir dir;
  MemberConfig c = member(dir.path());
  c.data_dir = "/var/lib/etcd data";
  EnvVars env = {{"ETCD_NAME", "m1"},
                 {"ETCD_INITIAL_CLUSTER", "m1=https://10.0.0.1:2380,m2=https://10.0.0.2:2380"},
                 {"ETCD_TRICKY", "say \"hi\": # not a comment, back\\slash  two spaces "},
                 {"ETCD_EMPTY", ""},
                 {"ETCD_LOOKS_LIKE_BOOL", "true"},
                 {"ETCD_LOOKS_LIKE_NUMBER", "0123"},
                 {"ETCD_CONTROL", "tab\there"}};
  std::string path = dir / "pod.yaml";
  write_file_atomic(path, render_kubelet_manifest(c, env));
  auto pod = parse_yaml(path);
  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["name"], "etcd-test-m1");
  EXPECT_EQ(pod["metadata"]["namespace"], "kube-system");
  EXPECT_EQ(pod["metadata"]["labels"], (nlohmann::json{{"component", "etcd"}, {"tier", "control-plane"}}));
  EXPECT_EQ(pod["metadata"]["annotations"]["etcdadm.io/config-dir"], c.config_dir);
  auto& spec = pod["spec"];
  EXPECT_EQ(spec["hostNetwork"], true);
  EXPECT_EQ(spec["priorityClassName"], "system-node-critical");
  ASSERT_EQ(spec["containers"].size(), 1u);
  auto& ctr = spec["containers"][0];
  EXPECT_EQ(ctr["name"], "etcd");
  EXPECT_EQ(ctr["image"], "quay.io/coreos/etcd:v3.5.17");
  EXPECT_EQ(ctr["command"], nlohmann::json::array({"etcd"}));
  ASSERT_EQ(ctr["env"].size(), env.size());
  for (size_t i = 0; i < env.size(); ++i) {
    EXPECT_EQ(ctr["env"][i]["name"], env[i].first);
    EXPECT_TRUE(ctr["env"][i]["value"].is_string()) << env[i].first;
    EXPECT_EQ(ctr["env"][i]["value"], env[i].second) << env[i].first;
  }
  EXPECT_EQ(ctr["volumeMounts"],
            (nlohmann::json::array({{{"name", "etcd-data"}, {"mountPath", "/var/lib/etcd data"}},
                                    {{"name", "etcd-certs"}, {"mountPath", c.certs_dir}, {"readOnly", true}}})));
  EXPECT_EQ(spec["volumes"],
            (nlohmann::json::array(
                {{{"name", "etcd-data"}, {"hostPath", {{"path", "/var/lib/etcd data"}, {"type", "DirectoryOrCreate"}}}},
                 {{"name", "etcd-certs"}, {"hostPath", {{"path", c.certs_dir}, {"type", "Directory"}}}}})));
}

TEST(KubeletInitSystem, ManifestFromTheEnvFileIsTheRunningState) {
  test::TempDir dir;
  MemberConfig c = member(dir.path());
  make_dirs(c.config_dir);
  auto init = make_init_system(InitSystemKind::kKubelet);
  std::string path = dir / "manifests/etcd-test.yaml";
  EXPECT_EQ(kubelet_manifest_path(c), path);
  EXPECT_THROW(init->start(c), Error);  // nothing to start from yet
  EXPECT_FALSE(init->running(c));
  EnvVars env = {{"ETCD_NAME", "m1"}, {"ETCD_DATA_DIR", c.data_dir}};
  write_file_atomic(c.env_file(), render_env_file(env), 0600);
  EXPECT_EQ(init->configure(c), std::vector<std::string>{path});
  EXPECT_EQ(read_file(path), render_kubelet_manifest(c, env));
  EXPECT_EQ(parse_yaml(path)["spec"]["containers"][0]["env"][1]["value"], c.data_dir);
  EXPECT_NO_THROW(init->start(c));
  EXPECT_TRUE(init->running(c));
  const std::string stopped = dir / "etcd-test.yaml.etcdadm-stopped";
  EXPECT_EQ(stopped_kubelet_manifest_path(c), stopped);
  EXPECT_EQ(init->files(c), (std::vector<std::string>{path, stopped}));
  // Stopped: the manifest waits beside the kubelet's directory (nothing holds the data dir here),
  // and start writes it again from the env file, with what changed meanwhile.
  init->stop(c, 1s);
  EXPECT_FALSE(path_exists(path));
  EXPECT_TRUE(path_exists(stopped));
  EXPECT_FALSE(init->running(c));
  EXPECT_NO_THROW(init->stop(c, 1s));
  env.emplace_back("ETCD_FORCE_NEW_CLUSTER", "true");
  write_file_atomic(c.env_file(), render_env_file(env), 0600, /*overwrite=*/true);
  EXPECT_NO_THROW(init->start(c));
  EXPECT_EQ(read_file(path), render_kubelet_manifest(c, env));
  EXPECT_FALSE(path_exists(stopped));
  // Without an env file (a manifest another tool wrote), the one moved aside goes back as it was.
  write_file_atomic(path, "kind: Pod # another tool's\n", 0600, /*overwrite=*/true);
  init->stop(c, 1s);
  std::filesystem::remove(c.env_file());
  EXPECT_NO_THROW(init->start(c));
  EXPECT_EQ(read_file(path), "kind: Pod # another tool's\n");
  write_file_atomic(c.env_file(), render_env_file(env), 0600);
  // A configure supersedes a stopped manifest.
  init->stop(c, 1s);
  init->configure(c);
  EXPECT_FALSE(path_exists(stopped));
  EXPECT_TRUE(init->running(c));
}

// A stop returns only once etcd let go of the member's data; when the kubelet does not stop it
// (here: a process of the test holds a file in the data dir), the manifest goes back.
TEST(KubeletInitSystem, AStopThatEtcdDoesNotFollowPutsTheManifestBack) {
  test::TempDir dir;
  MemberConfig c = member(dir.path());
  make_dirs(c.config_dir);
  make_dirs(c.data_dir + "/member");
  write_file_atomic(c.data_dir + "/member/db", "x", 0600);
  write_file_atomic(c.env_file(), render_env_file({{"ETCD_NAME", "m1"}}), 0600);
  auto init = make_init_system(InitSystemKind::kKubelet);
  init->configure(c);
  auto holder = ChildProcess::start({"sh", "-c", "exec 3<\"$0\"; exec sleep 120", c.data_dir + "/member/db"},
                                    dir / "holder.log");
  for (int i = 0; i < 50 && processes_holding(c.data_dir).empty(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_FALSE(processes_holding(c.data_dir).empty());
  try {
    init->stop(c, -59s);  // waits grace + 60 s: 1 s here
    ADD_FAILURE() << "a stop returned while the data dir was held";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTimeout);
    EXPECT_NE(std::string(e.what()).find("the manifest is back"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(init->running(c));
  holder.stop();
  init->stop(c, 1s);
  EXPECT_FALSE(init->running(c));
}

// ---- process ----

TEST(ProcessStartDetached, SleepRunsDetachedWithExactlyItsEnvironment) {
  test::TempDir dir;
  // Stray variables of ours must not reach the daemon; nor ignored or blocked signals.
  ScopedEnv stray("ETCD_STRAY", "leaked");
  ScopedEnv stray_ctl("ETCDCTL_ENDPOINTS", "http://leaked:2379");
  auto old_usr2 = ::signal(SIGUSR2, SIG_IGN);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  EnvVars env = {{"ETCD_NAME", "m1"}, {"ETCD_SPACE", "a b = c"}};
  int pid = 0;
  try {
    pid = start_detached({"/bin/sleep", "60"}, env, dir / "sleep.log", dir / "sleep.pid");
  } catch (...) {
    ::signal(SIGUSR2, old_usr2);
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    throw;
  }
  ProcessGuard guard(pid);
  ::signal(SIGUSR2, old_usr2);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);

  ASSERT_GT(pid, 0);
  EXPECT_EQ(read_file(dir / "sleep.pid"), std::to_string(pid) + "\n");
  EXPECT_EQ(running_pid(dir / "sleep.pid", "/bin/sleep"), pid);
  EXPECT_NE(::getsid(pid), ::getsid(0));
  // A new session whose leader (the intermediate child) has exited: it can never acquire a terminal.
  EXPECT_NE(::getsid(pid), pid);
  EXPECT_NE(status_field(pid, "PPid"), std::to_string(::getpid()));  // not our child: never our zombie
  std::map<std::string, std::string> want = {{"ETCD_NAME", "m1"}, {"ETCD_SPACE", "a b = c"}};
  want["PATH"] = std::getenv("PATH");
  if (const char* home = std::getenv("HOME")) want["HOME"] = home;
  EXPECT_EQ(environ_of(pid), want);
  EXPECT_EQ(status_field(pid, "SigIgn"), "0000000000000000");
  EXPECT_EQ(status_field(pid, "SigBlk"), "0000000000000000");
  // Only stdin (/dev/null) and stdout/stderr (the log) are open; the working dir is /.
  std::set<std::string> fds;
  for (const auto& e : stdfs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    fds.insert(e.path().filename().string());
  }
  EXPECT_EQ(fds, (std::set<std::string>{"0", "1", "2"}));
  std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd/";
  EXPECT_EQ(stdfs::read_symlink(fd_dir + "0"), "/dev/null");
  EXPECT_EQ(stdfs::read_symlink(fd_dir + "1"), dir / "sleep.log");
  EXPECT_EQ(stdfs::read_symlink(fd_dir + "2"), dir / "sleep.log");
  EXPECT_EQ(stdfs::read_symlink("/proc/" + std::to_string(pid) + "/cwd"), "/");
  struct stat st {};
  ASSERT_EQ(::stat((dir / "sleep.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  stop_pid_file(dir / "sleep.pid", "/bin/sleep", 5s);
  EXPECT_TRUE(gone(pid));
  EXPECT_FALSE(path_exists(dir / "sleep.pid"));
  EXPECT_EQ(running_pid(dir / "sleep.pid", "/bin/sleep"), 0);
}

TEST(ProcessStartDetached, StoppingWhatDoesNotRunIsFine) {
  test::TempDir dir;
  EXPECT_EQ(running_pid(dir / "none.pid", "/bin/sleep"), 0);
  EXPECT_NO_THROW(stop_pid_file(dir / "none.pid", "/bin/sleep", 1s));
  write_file_atomic(dir / "junk.pid", "not a pid\n");
  EXPECT_EQ(running_pid(dir / "junk.pid", "/bin/sleep"), 0);
  EXPECT_NO_THROW(stop_pid_file(dir / "junk.pid", "/bin/sleep", 1s));
  EXPECT_FALSE(path_exists(dir / "junk.pid"));
  MemberConfig c = member(dir.path());
  auto init = make_init_system(InitSystemKind::kProcess);
  EXPECT_FALSE(init->running(c));
  EXPECT_NO_THROW(init->stop(c, 1s));
  EXPECT_EQ(init->files(c), (std::vector<std::string>{c.pid_file(), c.log_file()}));
}

TEST(ProcessStartDetached, PidFileOfAnotherProgramIsNeverSignalled) {
  test::TempDir dir;
  // Our own pid, alive, but not etcd: a recycled pid. Being signalled would kill this test.
  write_file_atomic(dir / "etcd.pid", std::to_string(::getpid()) + "\n");
  EXPECT_EQ(running_pid(dir / "etcd.pid", "/usr/bin/etcd"), 0);
  stop_pid_file(dir / "etcd.pid", "/usr/bin/etcd", 100ms);
  EXPECT_FALSE(path_exists(dir / "etcd.pid"));  // stale: removed
}

TEST(ProcessStartDetached, ReplacedBinaryStillCountsAsTheSameProgram) {
  test::TempDir dir;
  std::string exe = dir / "sleep";
  stdfs::copy_file(stdfs::canonical("/bin/sleep"), exe);
  ::chmod(exe.c_str(), 0755);
  int pid = start_detached({exe, "60"}, {}, dir / "log", dir / "pid");
  ProcessGuard guard(pid);
  // An upgrade renames a new binary over the old one: /proc/<pid>/exe now ends in " (deleted)".
  stdfs::copy_file(exe, dir / "sleep.new");
  stdfs::rename(dir / "sleep.new", exe);
  ASSERT_NE(exe_of(pid).find("(deleted)"), std::string::npos) << exe_of(pid);
  EXPECT_EQ(running_pid(dir / "pid", exe), pid);
  stop_pid_file(dir / "pid", exe, 5s);
  EXPECT_TRUE(gone(pid));
}

TEST(ProcessStartDetached, ProcessIgnoringSigtermIsKilledAfterTheGrace) {
  test::TempDir dir;
  int pid = start_detached({"/bin/sh", "-c", "trap '' TERM; exec /bin/sleep 60"}, {}, dir / "log", dir / "pid");
  ProcessGuard guard(pid);
  auto begin = std::chrono::steady_clock::now();
  stop_pid_file(dir / "pid", "/bin/sleep", 300ms);
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 300ms);
  EXPECT_TRUE(gone(pid));
  EXPECT_FALSE(path_exists(dir / "pid"));
}

TEST(ProcessStartDetached, ProgramThatExitsAtOnceIsAnErrorWithTheLogTail) {
  test::TempDir dir;
  EXPECT_THROW(start_detached({"/bin/false"}, {}, dir / "false.log", dir / "false.pid"), Error);
  EXPECT_FALSE(path_exists(dir / "false.pid"));
  // Earlier runs are in the log too: only the tail is quoted, and it ends with this run's words.
  std::string old;
  for (int i = 0; i < 50; ++i) old += "old line " + std::to_string(i) + "\n";
  write_file_atomic(dir / "sh.log", old);
  try {
    start_detached({"/bin/sh", "-c", "echo 'bind: address already in use' >&2; exit 3"}, {}, dir / "sh.log",
                   dir / "sh.pid");
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kExternalTool);
    EXPECT_NE(msg.find("exited right after starting"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bind: address already in use"), std::string::npos) << msg;
    EXPECT_NE(msg.find("old line 49"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("old line 20\n"), std::string::npos) << msg;
  }
  EXPECT_FALSE(path_exists(dir / "sh.pid"));
}

TEST(ProcessStartDetached, MissingOrNonExecutableBinaryIsAClearError) {
  test::TempDir dir;
  try {
    start_detached({dir / "bin/etcd"}, {}, dir / "log", dir / "pid");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find(dir / "bin/etcd"), std::string::npos) << e.what();
  }
  // Executable bit but not a program the kernel can run: execve's errno comes back through the pipe.
  write_file_atomic(dir / "garbage",
                    std::string("\x7f"
                                "ELF garbage",
                                12),
                    0755);
  try {
    start_detached({dir / "garbage"}, {}, dir / "log", dir / "pid");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kExternalTool);
    EXPECT_NE(std::string(e.what()).find("cannot execute"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(path_exists(dir / "pid"));
}

// The daemon of a start whose exec failed exits on its own once it has reported why; under the test
// binaries' reaper it is re-parented there while exiting, and can still be there when the test ends
// (CI once failed the test above so: "left pid ... running; killed it: (exited)"). The reaper tells
// such a process from a leftover by /proc/<pid>/stat.
TEST(TestReaper, AZombieIsExitingAndASleeperIsALeftover) {
  pid_t sleeper = ::fork();
  ASSERT_GE(sleeper, 0);
  if (sleeper == 0) {
    ::pause();
    _exit(0);
  }
  pid_t quitter = ::fork();
  ASSERT_GE(quitter, 0);
  if (quitter == 0) _exit(0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(quitter), &info, WEXITED | WNOWAIT), 0);  // a zombie, kept
  auto zombie = test::parse_proc_stat(test::read_proc_file("/proc/" + std::to_string(quitter) + "/stat"));
  auto alive = test::parse_proc_stat(test::read_proc_file("/proc/" + std::to_string(sleeper) + "/stat"));
  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
  ::waitpid(quitter, nullptr, 0);
  ASSERT_TRUE(zombie && alive);
  EXPECT_EQ(zombie->ppid, ::getpid());
  EXPECT_TRUE(zombie->exiting);
  EXPECT_EQ(alive->ppid, ::getpid());
  EXPECT_FALSE(alive->exiting);
  // Known answers: a command name holding ") " and a process past the start of exit() (flags 0x4).
  auto odd = test::parse_proc_stat("4242 (a) b (c) S 17 4242 4242 0 -1 4194560 91 0 0 0");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->ppid, 17);
  EXPECT_FALSE(odd->exiting);
  auto leaving = test::parse_proc_stat("4243 (etcd) R 17 4243 4243 0 -1 4194564 91 0 0 0");
  ASSERT_TRUE(leaving);
  EXPECT_TRUE(leaving->exiting);
  EXPECT_FALSE(test::parse_proc_stat("4244 (etcd"));
  EXPECT_FALSE(test::parse_proc_stat("4244 (etcd) S 17"));
}

bool etcd_healthy(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(0, 300000);
  client.set_read_timeout(1, 0);
  auto res = client.Get("/health");
  return res && res->status == 200 && res->body.find("true") != std::string::npos;
}

TEST(ProcessInitSystem, RunsARealEtcd) {
  if (!path_exists("/usr/bin/etcd")) ETCDADM_SKIP_OUTSIDE_CI() << "/usr/bin/etcd is not installed";
  test::TempDir dir;
  MemberConfig c = member(dir.path());
  make_dirs(c.install_dir);
  stdfs::create_symlink("/usr/bin/etcd", c.etcd_binary());
  make_dirs(c.config_dir);
  int client_port = test::free_port(), peer_port = test::free_port();
  std::string client_url = "http://127.0.0.1:" + std::to_string(client_port);
  std::string peer_url = "http://127.0.0.1:" + std::to_string(peer_port);
  write_file_atomic(c.env_file(),
                    render_env_file({{"ETCD_NAME", "m1"},
                                     {"ETCD_DATA_DIR", c.data_dir},
                                     {"ETCD_LISTEN_CLIENT_URLS", client_url},
                                     {"ETCD_ADVERTISE_CLIENT_URLS", client_url},
                                     {"ETCD_LISTEN_PEER_URLS", peer_url},
                                     {"ETCD_INITIAL_ADVERTISE_PEER_URLS", peer_url},
                                     {"ETCD_INITIAL_CLUSTER", "m1=" + peer_url},
                                     {"ETCD_INITIAL_CLUSTER_TOKEN", "init-system-test"}}),
                    0600);
  auto init = make_init_system(InitSystemKind::kProcess);
  EXPECT_TRUE(init->configure(c).empty());
  const std::string mark = init->output_mark(c);
  init->start(c);
  int pid = read_pid_file(c.pid_file());
  ProcessGuard guard(pid);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!etcd_healthy(client_port) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(etcd_healthy(client_port)) << read_file(c.log_file());
  EXPECT_TRUE(init->running(c));
  EXPECT_EQ(exe_of(pid), "/usr/bin/etcd");
  init->start(c);  // already running: no second etcd
  EXPECT_EQ(read_pid_file(c.pid_file()), pid);
  init->stop(c, 5s);
  EXPECT_FALSE(init->running(c));
  EXPECT_TRUE(gone(pid));
  EXPECT_FALSE(path_exists(c.pid_file()));
  EXPECT_TRUE(path_exists(c.log_file()));
  // What it logged since the mark: this start's output, none of an earlier one's.
  const std::string since = init->output_since(c, mark);
  EXPECT_NE(since.find("init-system-test"), std::string::npos) << since.substr(0, 2000);
  EXPECT_EQ(init->output_since(c, init->output_mark(c)), "");
  EXPECT_FALSE(refused_on_inconsistent_data(since));
  EXPECT_EQ(init->output_since(c, ""), "") << "no mark, no output";
}

// etcd's initial corruption check refusing a start, in a plain line and in 3.5+'s zap JSON.
TEST(InitSystem, EtcdsRefusalOnInconsistentDataIsRecognised) {
  EXPECT_TRUE(refused_on_inconsistent_data("2026-12-02 16:47:00.1 C | etcdmain: 8e9e05c52164694d found data inconsistency with peers\n"));
  EXPECT_TRUE(refused_on_inconsistent_data("{\"level\":\"fatal\",\"msg\":\"discovery failed\",\"error\":\"8e9e05c52164694d found data "
                         "inconsistency with peers\"}"));
  EXPECT_FALSE(refused_on_inconsistent_data("{\"level\":\"warn\",\"msg\":\"found different hash values from remote peer\"}"));
  EXPECT_FALSE(refused_on_inconsistent_data(""));
}

TEST(InitSystem, FactoryReturnsEachKind) {
  for (auto kind : {InitSystemKind::kSystemd, InitSystemKind::kKubelet, InitSystemKind::kProcess}) {
    EXPECT_EQ(make_init_system(kind)->kind(), kind);
  }
}

}  // namespace
}  // namespace etcdadm

// How a member's etcd process is run (--init-system):
//   systemd  a unit <service-name>.service next to the env file etcd reads (EnvironmentFile=),
//            managed with systemctl when systemd is running here
//   kubelet  a static pod manifest <manifest-dir>/<service-name>.yaml that the kubelet runs
//            (hostNetwork, the data and certs dirs mounted from the host, the env file's variables)
//   process  etcdadm itself starts etcd in the background (new session, detached from the
//            terminal) with the env file's variables, a pid file and a log file; for containers,
//            tests and hosts without systemd
// All three read the same env file (MemberConfig::env_file()), so configuration lives in one place.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "etcdadm/member_config.h"

namespace etcdadm {

class InitSystem {
 public:
  virtual ~InitSystem() = default;
  virtual InitSystemKind kind() const = 0;
  // Throws when this init system cannot start anything on this host (systemd not running), so
  // init/join refuse in preflight instead of after the member was added to the cluster.
  virtual void check_usable() const {}
  // Writes the service definition (unit / manifest); the env file already exists. Returns the
  // files written. For kubelet the manifest is written here, which also starts the pod.
  virtual std::vector<std::string> configure(const MemberConfig& config) = 0;
  // Starts (or restarts) etcd. Returns once the start was requested; health is checked by the caller.
  // systemd: daemon-reload, enable, restart (Type=notify: returns when etcd reported ready, failed or
  // TimeoutStartSec passed); kUnavailable when systemd does not run here. kubelet: checks the manifest
  // is in place. process: starts etcd unless it already runs (then nothing).
  virtual void start(const MemberConfig& config) = 0;
  // Stops etcd and waits up to `grace` for it to exit (then kills it, for process). Idempotent:
  // nothing running is fine.
  virtual void stop(const MemberConfig& config, std::chrono::milliseconds grace) = 0;
  // True when etcd is running (process), active (systemd) or its manifest is in place (kubelet).
  virtual bool running(const MemberConfig& config) = 0;
  // Every file configure() writes (process: the pid and log files), for reset (removing missing
  // files is fine).
  virtual std::vector<std::string> files(const MemberConfig& config) const = 0;
  // What etcd wrote from a point on, to tell why it stopped: output_mark() before a start, then
  // output_since(mark) for what it logged since (at most the last 1 MiB). process: the log file
  // from its size at the mark; systemd: the unit's journal since the mark's time. kubelet: the
  // pod's log is the kubelet's, not read here (""), and so is everything when the mark is "".
  virtual std::string output_mark(const MemberConfig&) { return ""; }
  virtual std::string output_since(const MemberConfig&, const std::string& /*mark*/) { return ""; }
};

// Whether etcd refused to start because its initial corruption check found its data differs from a
// peer's, from what it logged (InitSystem::output_since; 3.5 to 3.7 log "<id> found data
// inconsistency with peers").
bool refused_on_inconsistent_data(const std::string& output);

std::unique_ptr<InitSystem> make_init_system(InitSystemKind kind);

// ---- the definitions themselves (pure text, unit-tested) ----

// <service-name>.service: EnvironmentFile=<env file>, ExecStart=<install-dir>/etcd, Type=notify,
// Restart=on-failure, RestartSec=5s, LimitNOFILE=65536, disk priorities when enabled,
// WantedBy=multi-user.target (etcdadm's unit, named after the service).
std::string render_systemd_unit(const MemberConfig& config);
// Where the unit is written: <systemd-dir>/<service-name>.service; the directory is
// /etc/systemd/system unless ETCDADM_SYSTEMD_DIR says otherwise (tests).
std::string systemd_unit_path(const MemberConfig& config);

// A v1 Pod in kube-system: image <image-repository>:v<version>, command [etcd], the member's
// variables as env, hostNetwork, priorityClassName system-node-critical, hostPath volumes for the
// data dir (DirectoryOrCreate) and the certs dir (read-only).
std::string render_kubelet_manifest(const MemberConfig& config, const EnvVars& env);
std::string kubelet_manifest_path(const MemberConfig& config);
// Where the kubelet init system's stop keeps the manifest while the member is stopped: beside the
// kubelet's directory (<manifest-dir>/../<service-name>.yaml.etcdadm-stopped), where the kubelet
// does not look.
std::string stopped_kubelet_manifest_path(const MemberConfig& config);

// ---- the process init system's building blocks ----

// Starts argv detached from us (setsid, stdin /dev/null, stdout+stderr appended to log_file) with
// exactly `env` added to a minimal environment (PATH, HOME), and writes its pid to pid_file
// (atomically, 0644). Returns the pid. Throws when it cannot start or exits within 200 ms (the log
// tail is in the message).
int start_detached(const std::vector<std::string>& argv, const EnvVars& env, const std::string& log_file,
                   const std::string& pid_file);
// The pid in pid_file when that process is alive and its executable is `expected_exe` (so a
// recycled pid is never signalled; a binary replaced since, "<exe> (deleted)", still counts);
// 0 otherwise, also for a zombie.
int running_pid(const std::string& pid_file, const std::string& expected_exe);
// SIGTERM, wait up to grace, then SIGKILL and wait until it is gone (a zombie counts as gone);
// removes the pid file. Fine when nothing runs; a pid file naming another program is only removed.
void stop_pid_file(const std::string& pid_file, const std::string& expected_exe, std::chrono::milliseconds grace);

}  // namespace etcdadm

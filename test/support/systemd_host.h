// A host whose init is a real systemd: Debian 12's systemd 252 booted as PID 1 of namespaces of
// its own, chrooted into a writable overlay on the root tree scripts/systemd-root.sh builds and
// caches (test/support/systemd_boot.sh says how, and why never on the machine's own root). The
// build's etcdadm is bind-mounted in as /usr/bin/etcdadm; the test's temp dir is shared at its own
// path. Commands run inside through nsenter, so `systemctl` and `journalctl` are the oracles of
// what etcdadm's systemd init system did. Stopped by killing PID 1 from outside, which ends every
// process of the host; its cgroup is removed after.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/subprocess.h"

namespace etcdadm::test {

class SystemdHost {
 public:
  // Why this process cannot boot a systemd host ("" when it can): root, unshare/nsenter, a cgroup2
  // hierarchy, and the tree (`bash scripts/systemd-root.sh build/cmd/etcdadm`, which test.sh runs).
  static std::string unavailable();

  // Boots `name` with its files under `dir` (made), in network namespace `netns` ("" for the
  // machine's), sharing `shared_dirs`; returns once systemd says the system is running. Throws
  // with the boot's output when it does not come up within 60 s.
  SystemdHost(const std::string& dir, const std::string& name, const std::string& netns = "",
              const std::vector<std::string>& shared_dirs = {});
  ~SystemdHost();
  SystemdHost(const SystemdHost&) = delete;
  SystemdHost& operator=(const SystemdHost&) = delete;

  const std::string& name() const { return name_; }
  pid_t init_pid() const { return init_pid_; }
  // argv run inside the host (its namespaces and root), with a plain PATH.
  ProcessResult run(const std::vector<std::string>& argv, RunOptions options = {}) const;
  // The path outside of a file inside the host (through /proc/<PID 1>/root).
  std::string outside(const std::string& inside) const;
  // `systemctl show UNIT -p PROPERTY --value`.
  std::string unit_property(const std::string& unit, const std::string& property) const;
  // Kills PID 1 (and so the host); idempotent.
  void stop();

 private:
  std::string dir_;
  std::string name_;
  std::string cgroup_;
  ChildProcess boot_;
  pid_t init_pid_ = -1;
};

}  // namespace etcdadm::test

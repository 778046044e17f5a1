// A private etcd: one process on a data dir of etcdadm's own making (a drill's restored backup, the
// probe of `etcdadm recover`), serving on unix sockets in a 0700 directory and on no TCP port, since
// it serves every Secret in it without TLS or auth (docs/security.md) and no client of the cluster
// may ever reach it. Stopped (and reaped) by the destructor however the caller's work ends.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "common/subprocess.h"

namespace etcdadm {

// Where the sockets go: `scratch` (a 0700 directory), unless its path is too long for a socket
// address (sun_path, 108 bytes with its NUL), then a 0700 directory of their own in /tmp.
class SocketDir {
 public:
  explicit SocketDir(const std::string& scratch);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::optional<ScratchDir> own_;
};

class PrivateEtcd {
 public:
  // `what`: the work it serves, for messages ("backup drill"). `cancel`: when it becomes true, the
  // wait for the member stops with kInterrupted. `db_bytes`: the db's size, for the quota.
  PrivateEtcd(std::string what, std::string binary, std::string data_dir, std::string name, std::string log_path,
              std::string socket_dir, uint64_t db_bytes, const std::atomic<bool>* cancel = nullptr);
  ~PrivateEtcd();
  PrivateEtcd(const PrivateEtcd&) = delete;
  PrivateEtcd& operator=(const PrivateEtcd&) = delete;

  // unix:///<socket dir>/client:2379, for EtcdClient.
  const std::string& client_url() const { return client_url_; }

  // Starts etcd (with `extra_args` after the private ones, e.g. --force-new-cluster) and waits until
  // it has a leader and answers a linearizable read. Throws with the end of its log otherwise.
  void start_and_wait(std::chrono::seconds timeout, const std::vector<std::string>& extra_args = {});
  // Stops it (SIGTERM: etcd commits its backend on the way out). The destructor does it too.
  void stop();

 private:
  bool wait_healthy(std::chrono::seconds timeout);

  std::string what_, binary_, data_dir_, name_, log_path_, socket_dir_;
  uint64_t db_bytes_;
  const std::atomic<bool>* cancel_;
  std::string client_url_;
  ChildProcess child_;
  bool started_ = false;
  ErrorKind failed_kind_ = ErrorKind::kUnavailable;
  std::string failure_;
};

}  // namespace etcdadm

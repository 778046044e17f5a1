#include "restore/private_etcd.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <fstream>
#include <string_view>
#include <thread>

#include "common/interrupt.h"
#include "etcd/client.h"

extern char** environ;

namespace etcdadm {

namespace {

using Clock = std::chrono::steady_clock;

// etcd's sockets, relative to its working directory (the socket directory): etcd 3.4 wants a
// unix URL of the form unix://host:port, whose host:port is then the socket's file name.
constexpr const char* kClientSocket = "client:2379";
constexpr const char* kPeerSocket = "peer:2380";

// The last lines of etcd's log, for errors.
std::string log_tail(const std::string& path, size_t lines = 8) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "\n  " + all[i];
  return out;
}

}  // namespace

SocketDir::SocketDir(const std::string& scratch) : path_(scratch) {
  if (path_.size() + 1 + std::string(kClientSocket).size() >= sizeof(sockaddr_un{}.sun_path)) {
    own_.emplace("etcdadm-private-sockets", "/tmp");
    path_ = own_->path();
  }
}

PrivateEtcd::PrivateEtcd(std::string what, std::string binary, std::string data_dir, std::string name,
                         std::string log_path, std::string socket_dir, uint64_t db_bytes,
                         const std::atomic<bool>* cancel)
    : what_(std::move(what)),
      binary_(std::move(binary)),
      data_dir_(std::move(data_dir)),
      name_(std::move(name)),
      log_path_(std::move(log_path)),
      socket_dir_(std::move(socket_dir)),
      db_bytes_(db_bytes),
      cancel_(cancel),
      client_url_("unix://" + socket_dir_ + "/" + kClientSocket) {}

PrivateEtcd::~PrivateEtcd() { stop(); }

void PrivateEtcd::stop() {
  if (!started_) return;
  started_ = false;
  int code = child_.stop(std::chrono::seconds(10));
  spdlog::debug("{} etcd (pid {}) stopped, exit {}", what_, child_.pid(), code);
}

void PrivateEtcd::start_and_wait(std::chrono::seconds timeout, const std::vector<std::string>& extra_args) {
  const std::string client = std::string("unix://") + kClientSocket, peer = std::string("unix://") + kPeerSocket;
  // The data dir's WAL fixes the membership: the --initial-* flags are not read on a restored
  // member, and a single member never dials the peer URL it advertises.
  std::vector<std::string> argv = {binary_, "--name", name_, "--data-dir", data_dir_, "--listen-client-urls", client,
                                   "--advertise-client-urls", client, "--listen-peer-urls", peer,
                                   "--initial-advertise-peer-urls", peer, "--initial-cluster", name_ + "=" + peer,
                                   // Alone, it elects itself after one election timeout: a short one
                                   // (etcd's 1 s default is sized for networks) is most of the start.
                                   "--heartbeat-interval", "10", "--election-timeout", "100"};
  // Above etcd's default quota (2 GiB) a restored db would raise NOSPACE at once.
  if (db_bytes_ > (3ull << 29))
    argv.insert(argv.end(), {"--quota-backend-bytes", std::to_string(db_bytes_ + (1ull << 30))});
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  RunOptions ro;
  ro.working_dir = socket_dir_;  // the sockets' relative names resolve there
  // The operator's ETCD_* variables (a shell that runs etcd by hand) are not this member's.
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view var(*e);
    if (var.rfind("ETCD_", 0) == 0) ro.unset_env.emplace_back(var.substr(0, var.find('=')));
  }
  child_ = ChildProcess::start(argv, log_path_, ro);
  started_ = true;
  spdlog::info("{} etcd started (pid {}), serving {} at {}", what_, child_.pid(), data_dir_, client_url_);
  if (wait_healthy(timeout)) return;
  const std::string tail = log_tail(log_path_);
  child_.stop(std::chrono::seconds(5));
  started_ = false;
  throw Error(failed_kind_, failure_ + "; its log (" + log_path_ + ") ends with:" + tail,
              "check that " + binary_ + " runs on this machine and can serve data of this etcd version");
}

bool PrivateEtcd::wait_healthy(std::chrono::seconds timeout) {
  ConnectionConfig c;
  c.endpoints = {client_url_};
  c.dial_timeout = std::chrono::milliseconds(1000);
  c.command_timeout = std::chrono::milliseconds(3000);
  EtcdClient client(c);
  const auto deadline = Clock::now() + timeout;
  std::string last = "no answer yet";
  while (Clock::now() < deadline) {
    throw_if_interrupted(what_);
    if (cancel_ != nullptr && cancel_->load())
      throw Error(ErrorKind::kInterrupted, what_ + " cancelled (shutting down)");
    if (!child_.running()) {
      failed_kind_ = ErrorKind::kExternalTool;
      failure_ = "etcd " + binary_ + " exited while starting on " + data_dir_;
      return false;
    }
    try {
      auto st = client.status(client_url_);
      if (st.leader() != 0) {
        etcdserverpb::RangeRequest probe;  // linearizable: applied through raft
        probe.set_key("\0", 1);
        probe.set_range_end("\0", 1);
        probe.set_count_only(true);
        client.range(probe);
        return true;
      }
      last = "no leader yet";
    } catch (const Error& e) {
      last = e.what();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  failed_kind_ = ErrorKind::kTimeout;
  failure_ = "etcd did not serve " + data_dir_ + " within " + std::to_string(timeout.count()) + "s (" + last + ")";
  return false;
}

}  // namespace etcdadm

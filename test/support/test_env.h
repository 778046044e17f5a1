// Test helpers: temp dirs, free loopback ports, running the etcdadm binary, and real etcd members
// started on loopback (plaintext, TLS with client certs, or restored data dirs). Every process a
// test starts is stopped by PID in the destructor.
#pragma once

#include <sys/types.h>

#include <set>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/http_client.h"
#include "store/blob_store.h"
#include "common/subprocess.h"
#include "etcd/client.h"

namespace etcdadm::test {

// A fresh directory under $TMPDIR, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// Whether `check` holds within `timeout`, asked every 250 ms (and once more at the end).
bool holds_within(std::chrono::milliseconds timeout, const std::function<bool()>& check);

// A TCP port on 127.0.0.1 that was free a moment ago, below the kernel's ephemeral range, and
// reserved for this process: no other free_port() call, here or in a concurrent test process, returns it.
int free_port();

// A loopback port whose kernel completes TCP handshakes (from the listen backlog) and where nothing
// ever answers: a hung member, or the wrong service. Closed on destruction.
class SilentListener {
 public:
  SilentListener();
  ~SilentListener();
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// An Environment holding exactly `vars` (and `home`), for credential-chain tests.
Environment fake_environment(std::map<std::string, std::string> vars, std::string home = "/nonexistent-home");

// A backup directory in etcd-manager's minimal form (gzip data + _etcd_backup.meta) holding
// placeholder bytes: enough for listing and retention tests, not for restores.
void write_synthetic_backup(BlobStore& store, const std::string& name);

// Variables an S3/GCS test must control itself: the machine may set any of them. run_etcdadm
// unsets those the caller does not pass.
const std::vector<std::string>& cloud_env_vars();

// Runs the etcdadm binary under test with `args`; ETCDADM_CATALOG points into `catalog_dir`.
ProcessResult run_etcdadm(const std::vector<std::string>& args, const std::string& catalog_path,
                          const RunOptions& extra = {});

// CA + server + client certificates made with the openssl CLI (server cert valid for 127.0.0.1).
// Keys are ECDSA P-256 unless `rsa` (RSA 2048 keys cost the openssl CLI about a CPU-second a set;
// TlsAuth.SaveWithClientCertificates keeps them, the common production key).
struct TlsFiles {
  std::string ca_cert, ca_key, server_cert, server_key, client_cert, client_key;
  // A second, unrelated CA (for "wrong CA" tests).
  std::string other_ca_cert;
};
TlsFiles make_tls_files(const std::string& dir, bool rsa = false);

struct EtcdOptions {
  std::string name = "m1";
  std::string data_dir;          // default: <dir>/<name>.etcd
  bool tls = false;              // client URLs served with TLS and client-cert auth
  const TlsFiles* tls_files = nullptr;
  int client_port = 0;           // 0: pick a free one
  int peer_port = 0;
  std::string initial_cluster;   // default: <name>=<peer URL>
  std::string initial_cluster_state = "new";
  std::string initial_cluster_token = "etcd-test";
  std::vector<std::string> extra_flags;
  std::string etcd_binary = "etcd";  // default: the etcd under test (first on PATH); another version's for cross-version tests
};

// One etcd member on loopback.
class EtcdMember {
 public:
  EtcdMember(const std::string& dir, EtcdOptions options);
  ~EtcdMember();
  void start();                   // starts and waits until the member answers Status
  void stop();
  void kill_now(int signal);
  std::string client_url() const;
  std::string peer_url() const;
  const EtcdOptions& options() const { return opts_; }
  ConnectionConfig connection() const;  // config with TLS client files when TLS
  std::string log() const;
  pid_t pid() const { return proc_.pid(); }

 private:
  std::string dir_;
  EtcdOptions opts_;
  std::string log_path_;
  ChildProcess proc_;
};

// A failpoint that pauses an etcdadm child process (common/failpoint.h): env() goes into the
// child's RunOptions; reached() polls, up to `limit`, for the file the paused process writes.
class FailpointPause {
 public:
  FailpointPause(const std::string& dir, std::string name);  // the marker dir goes under `dir`
  std::map<std::string, std::string> env() const;
  bool reached(std::chrono::milliseconds limit = std::chrono::seconds(20)) const;

 private:
  std::string marker_dir_;
  std::string name_;
};

// Whether the local store `store` holds a save's temp data file (".etcd.backup*.tmp-*"), the mark
// of a save caught mid-write. Files renamed or removed while it looks are skipped.
bool has_temp_data_file(const std::string& store);

// A /proc file of a process that may be exiting right now: "" when it cannot be read whole. (An
// ifstream throws from underflow when read() fails with ESRCH mid-way: "basic_filebuf::underflow
// error reading the file: No such process", which once aborted the reaper and once failed a drill
// test that scanned /proc while an unrelated process exited.)
std::string read_proc_file(const std::string& path);
// "PID: command line" (arguments NUL-separated) of the live processes whose command line mentions
// `text`; a process that ends while this looks is skipped.
std::vector<std::string> processes_mentioning(const std::string& text);
// Inode numbers of the sockets process `pid` holds open (/proc/PID/fd).
std::set<std::string> socket_inodes_of(pid_t pid);
// The rows of /proc/net/`table` (tcp, tcp6, unix), split on blanks, the header dropped. The kernel
// hands the file out in pieces: a socket that moves in its table meanwhile may be listed twice.
std::vector<std::vector<std::string>> proc_net_rows(const std::string& table);

// A disk's damage that bbolt cannot notice (it keeps no checksum of its pages): every copy of
// `value` in the file at `path` overwritten in place by `damaged` (the same length); returns how
// many copies there were.
int overwrite_in_place(const std::string& path, const std::string& value, const std::string& damaged);

// The Prometheus alert rules docs/sidecar.md gives (the YAML of its ```yaml block that begins with
// `groups:`), "" when the doc has none: what the tests hand to promtool and check the metrics of.
std::string documented_alert_rules();

// One plain HTTP request (the sidecar's endpoints); throws Error when nothing answers.
HttpResponse http(const std::string& method, const std::string& url);

// A tmpfs mounted at `path` (created if missing; root only) with mount(8)'s `options`, unmounted
// (lazily, so that a process still in it cannot keep it) when this goes. Throws when the mount fails.
class ScopedTmpfs {
 public:
  ScopedTmpfs(const std::string& path, const std::string& options);
  ~ScopedTmpfs();
  ScopedTmpfs(const ScopedTmpfs&) = delete;
  ScopedTmpfs& operator=(const ScopedTmpfs&) = delete;
  void remount(const std::string& options);
  void remount_read_only();

 private:
  std::string path_;
};

// Adds user root with `password` and turns auth on, with the member's etcdctl (API v3).
void enable_auth_with_root(const EtcdMember& member, const std::string& password);

// Writes `count` keys "<prefix>NNNNNN" with pseudo-random values of `value_size` bytes, 100 per txn.
void load_keys(EtcdClient& client, const std::string& prefix, int count, size_t value_size, uint32_t seed = 1);

// Every key/value in the cluster at `revision` (0 = latest), in key order.
std::vector<std::pair<std::string, std::string>> all_keys(EtcdClient& client, int64_t revision = 0);
// The same with every field a restore must bring back (create and mod revision, version, lease),
// one comparable line per key.
std::vector<std::string> all_key_fields(EtcdClient& client, int64_t revision = 0);

}  // namespace etcdadm::test

#include "test/support/test_env.h"

#include "etcd/etcd_version.h"

#include <functional>

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "test/support/etcd_versions.h"

namespace etcdadm::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/etcdadm-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back(0);
  if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

// The first port of the kernel's ephemeral range (bind to port 0 and outgoing connections use it).
int ephemeral_range_start() {
  try {
    int lo = std::stoi(read_file("/proc/sys/net/ipv4/ip_local_port_range"));
    if (lo > 10001 && lo <= 65535) return lo;
  } catch (const std::exception&) {
  }
  return 32768;
}

bool can_bind(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// A port handed out stays reserved for the life of the process that took it: never handed out
// twice here, and held by an flock on /tmp/etcdadm-test-ports/<port> against the other test
// processes that ctest -j runs beside this one (the lock ends with the process, however it ends).
// Without it, two picks could name the same free port before either was bound, and an etcd
// would fail with "address already in use" (seen once in a five-run series).
bool reserve_port(int port) {
  static std::mutex mu;
  static std::set<int> reserved;
  std::lock_guard<std::mutex> lock(mu);
  if (reserved.count(port)) return false;
  const std::string dir = "/tmp/etcdadm-test-ports";
  ::mkdir(dir.c_str(), 01777);
  int fd = ::open((dir + "/" + std::to_string(port)).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0666);
  if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return false;  // another test process holds it
  }
  reserved.insert(port);  // the fd stays open on purpose: it holds the lock
  return true;
}

}  // namespace

// Picked below the ephemeral range: a port there cannot be taken by one of the many outgoing loopback
// connections of the tests running in parallel between this check and the server's own bind (a port
// from bind(0) can, and the server then fails to start).
bool holds_within(std::chrono::milliseconds timeout, const std::function<bool()>& check) {
  for (auto until = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < until;) {
    if (check()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return check();
}

int free_port() {
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(10000, ephemeral_range_start() - 1);
  for (int i = 0; i < 1000; ++i) {
    int port = pick(rng);
    if (can_bind(port) && reserve_port(port)) return port;
  }
  throw std::runtime_error("no free TCP port on 127.0.0.1 below the ephemeral range");
}

Environment fake_environment(std::map<std::string, std::string> vars, std::string home) {
  Environment e;
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  e.get = [shared](const std::string& k) -> std::optional<std::string> {
    auto it = shared->find(k);
    if (it == shared->end()) return std::nullopt;
    return it->second;
  };
  e.home = std::move(home);
  return e;
}

void write_synthetic_backup(BlobStore& store, const std::string& name) {
  store.write_small(name + "/etcd.backup.gz", "placeholder for " + name);
  store.write_small(name + "/_etcd_backup.meta", R"({"etcdVersion":"3.4.23","timestamp":1700000000})");
}

const std::vector<std::string>& cloud_env_vars() {
  static const std::vector<std::string> vars = {
      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
      "AWS_DEFAULT_REGION", "AWS_CA_BUNDLE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_STS",
      "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
      "AWS_ROLE_SESSION_NAME", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
      "AWS_EC2_METADATA_SERVICE_ENDPOINT", "S3_ENDPOINT", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_REGION",
      "GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST", "GCE_METADATA_HOST",
      "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING",
      "AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST",
      "AZURE_POD_IDENTITY_AUTHORITY_HOST", "OS_AUTH_URL", "OS_USERNAME", "OS_USER_ID", "OS_PASSWORD", "OS_PROJECT_NAME",
      "OS_PROJECT_ID", "OS_TENANT_NAME", "OS_TENANT_ID", "OS_USER_DOMAIN_NAME", "OS_USER_DOMAIN_ID", "OS_PROJECT_DOMAIN_NAME",
      "OS_PROJECT_DOMAIN_ID", "OS_DOMAIN_NAME", "OS_REGION_NAME", "OS_INTERFACE", "OS_ENDPOINT_TYPE", "OS_AUTH_VERSION",
      "OS_IDENTITY_API_VERSION", "OS_APPLICATION_CREDENTIAL_ID", "OS_APPLICATION_CREDENTIAL_SECRET", "OS_STORAGE_URL",
      "OS_AUTH_TOKEN", "ST_AUTH", "ST_USER", "ST_KEY", "ST_AUTH_VERSION"};
  return vars;
}

ProcessResult run_etcdadm(const std::vector<std::string>& args, const std::string& catalog_path, const RunOptions& extra) {
  std::vector<std::string> argv = {ETCDADM_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o = extra;
  o.env["ETCDADM_CATALOG"] = catalog_path;
  // The machine may set these; tests rely only on what they pass explicitly.
  for (const char* v : {"ETCDCTL_ENDPOINTS", "ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY", "ETCDCTL_USER",
                        "ETCDCTL_PASSWORD", "ETCDADM_STORE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"}) {
    if (!o.env.count(v)) o.unset_env.push_back(v);
  }
  for (const auto& v : cloud_env_vars()) {
    if (!o.env.count(v)) o.unset_env.push_back(v);
  }
  // Never wait for an EC2 metadata service that is not there.
  if (!o.env.count("AWS_EC2_METADATA_DISABLED")) o.env["AWS_EC2_METADATA_DISABLED"] = "true";
  if (!o.timeout) o.timeout = std::chrono::seconds(120);
  return run_process(argv, o);
}

static void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_process(argv);
  if (r.exit_code != 0) throw std::runtime_error("openssl failed: " + r.output);
}

// openssl's -newkey argument(s) for the key type of make_tls_files.
static std::vector<std::string> new_key_args(bool rsa) {
  if (rsa) return {"-newkey", "rsa:2048"};
  return {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"};
}

static void make_ca(const std::string& dir, const std::string& name, bool rsa, std::string& cert, std::string& key) {
  cert = dir + "/" + name + ".crt";
  key = dir + "/" + name + ".key";
  std::vector<std::string> args = {"req", "-x509"};
  for (const auto& a : new_key_args(rsa)) args.push_back(a);
  for (const auto& a : {"-nodes", "-keyout"}) args.push_back(a);
  args.insert(args.end(), {key, "-out", cert, "-days", "2", "-subj", "/CN=" + name, "-addext",
                           "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"});
  openssl(args);
}

static void make_leaf(const std::string& dir, const std::string& name, bool rsa, const std::string& ca_cert,
                      const std::string& ca_key, const std::string& ext, std::string& cert, std::string& key) {
  cert = dir + "/" + name + ".crt";
  key = dir + "/" + name + ".key";
  std::string csr = dir + "/" + name + ".csr";
  std::string extfile = dir + "/" + name + ".ext";
  write_file_atomic(extfile, ext);
  std::vector<std::string> args = {"req"};
  for (const auto& a : new_key_args(rsa)) args.push_back(a);
  args.insert(args.end(), {"-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=" + name});
  openssl(args);
  openssl({"x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2",
           "-extfile", extfile});
}

TlsFiles make_tls_files(const std::string& dir, bool rsa) {
  TlsFiles t;
  make_dirs(dir);
  make_ca(dir, "ca", rsa, t.ca_cert, t.ca_key);
  std::string other_key;
  make_ca(dir, "other-ca", rsa, t.other_ca_cert, other_key);
  make_leaf(dir, "server", rsa, t.ca_cert, t.ca_key,
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n", t.server_cert, t.server_key);
  make_leaf(dir, "client", rsa, t.ca_cert, t.ca_key, "extendedKeyUsage=clientAuth\n", t.client_cert, t.client_key);
  return t;
}

EtcdMember::EtcdMember(const std::string& dir, EtcdOptions options) : dir_(dir), opts_(std::move(options)) {
  if (opts_.client_port == 0) opts_.client_port = free_port();
  if (opts_.peer_port == 0) opts_.peer_port = free_port();
  if (opts_.data_dir.empty()) opts_.data_dir = dir_ + "/" + opts_.name + ".etcd";
  if (opts_.initial_cluster.empty()) opts_.initial_cluster = opts_.name + "=" + peer_url();
  log_path_ = dir_ + "/" + opts_.name + ".log";
}

EtcdMember::~EtcdMember() { stop(); }

std::string EtcdMember::client_url() const {
  return std::string(opts_.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(opts_.client_port);
}

std::string EtcdMember::peer_url() const { return "http://127.0.0.1:" + std::to_string(opts_.peer_port); }

ConnectionConfig EtcdMember::connection() const {
  ConnectionConfig c;
  c.endpoints = {client_url()};
  if (opts_.tls) {
    c.cacert = opts_.tls_files->ca_cert;
    c.cert = opts_.tls_files->client_cert;
    c.key = opts_.tls_files->client_key;
  }
  return c;
}

std::string EtcdMember::log() const {
  try {
    return read_file(log_path_);
  } catch (...) {
    return "";
  }
}

void EtcdMember::start() {
  std::vector<std::string> argv = {opts_.etcd_binary,
                                   "--name=" + opts_.name,
                                   "--data-dir=" + opts_.data_dir,
                                   "--listen-client-urls=" + client_url(),
                                   "--advertise-client-urls=" + client_url(),
                                   "--listen-peer-urls=" + peer_url(),
                                   "--initial-advertise-peer-urls=" + peer_url(),
                                   "--initial-cluster=" + opts_.initial_cluster,
                                   "--initial-cluster-state=" + opts_.initial_cluster_state,
                                   "--initial-cluster-token=" + opts_.initial_cluster_token,
                                   "--quota-backend-bytes=8589934592",
                                   "--logger=zap",
                                   "--log-outputs=stderr"};
  if (opts_.tls) {
    argv.push_back("--cert-file=" + opts_.tls_files->server_cert);
    argv.push_back("--key-file=" + opts_.tls_files->server_key);
    argv.push_back("--trusted-ca-file=" + opts_.tls_files->ca_cert);
    argv.push_back("--client-cert-auth");
  }
  // A member alone elects itself after one election timeout, so etcd's default of 1 s (randomised
  // up to 2 s) was most of every single-member test's start; the drill's private member runs with
  // the same settings (restore/drill.cc). With an election that quick, etcd 3.6+ sets the cluster
  // version before its backend holds the raft term, fails to write the storage version ("missing
  // term information") and tries again only 4 s later, so a snapshot taken meanwhile says storage
  // 3.5; a 10 ms backend batch interval (etcd's default is 100 ms) commits the term first (the
  // storage version is there 0.16 s after start, measured on 3.6.16). Clusters keep etcd's
  // defaults: their elections are part of what some tests time (the rolling upgrade's write gap).
  bool alone = opts_.initial_cluster.find(',') == std::string::npos;
  bool timing_set = std::any_of(opts_.extra_flags.begin(), opts_.extra_flags.end(), [](const std::string& f) {
    return f.rfind("--election-timeout", 0) == 0 || f.rfind("--heartbeat-interval", 0) == 0;
  });
  if (alone && !timing_set) {
    argv.push_back("--heartbeat-interval=10");
    argv.push_back("--election-timeout=100");
    argv.push_back("--backend-batch-interval=10ms");
  }
  argv.insert(argv.end(), opts_.extra_flags.begin(), opts_.extra_flags.end());
  RunOptions ro;
  for (const char* v : {"ETCD_NAME", "ETCD_DATA_DIR", "ETCD_INITIAL_CLUSTER"}) ro.unset_env.push_back(v);
  proc_ = ChildProcess::start(argv, log_path_, ro);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    try {
      // A new client (and channel) each time: a channel whose first dial was refused waits out
      // gRPC's reconnect backoff (up to 2 s, client.cc) before it tries again.
      ConnectionConfig quick = connection();
      quick.dial_timeout = std::chrono::milliseconds(200);
      EtcdClient client(quick);
      auto st = client.status(client_url());
      if (st.leader() != 0) {
        // The member that answered must be this one: when another test's etcd took our client port
        // between free_port() and our bind, ours exits and that one answers instead.
        bool ours = true;
        try {
          auto members = client.member_list();
          ours = false;
          for (const auto& m : members.members()) {
            ours = ours || (m.id() == st.header().member_id() &&
                            std::find(m.peerurls().begin(), m.peerurls().end(), peer_url()) != m.peerurls().end());
          }
        } catch (const Error&) {
          // A learner refuses MemberList: its process still running is the check that remains.
        }
        if (!ours) throw std::runtime_error("another etcd answers on " + client_url() + ":\n" + log());
        // etcd 3.6+ writes its storage version a moment after it serves (0.16 s measured, once
        // over 0.8 s on a loaded machine): a snapshot taken before says none. A member alone
        // decides its cluster version itself, so its storage version always comes to be its own
        // minor; wait for that. (Until then Status reports what etcd detects from the schema,
        // 3.5.0, not nothing.)
        auto version = EtcdVersion::parse(st.version());
        auto storage = EtcdVersion::parse(st.storageversion());
        bool storage_pending = alone && version && (version->major > 3 || version->minor >= 6) &&
                               !(storage && storage->same_minor(*version));
        // The cluster version, too, is decided by the leader a moment after it serves: a snapshot
        // taken before says none (etcd 3.4, once, beside five other tests). /version names it;
        // plain HTTP only (the TLS members' tests do not read it).
        bool cluster_pending = false;
        if (alone && !opts_.tls && !storage_pending) {
          auto answer = http("GET", client_url() + "/version");
          auto doc = nlohmann::json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
          std::string decided = doc.is_object() ? doc.value("etcdcluster", "") : "";
          cluster_pending = answer.status != 200 || decided.empty() || decided == "not_decided";
        }
        if (proc_.running() && !storage_pending && !cluster_pending) return;
      }
    } catch (const Error&) {
    }
    if (!proc_.running()) throw std::runtime_error("etcd exited during start-up:\n" + log());
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("etcd did not become ready:\n" + log());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void EtcdMember::stop() { proc_.stop(std::chrono::seconds(10)); }

void EtcdMember::kill_now(int signal) { proc_.kill_now(signal); }

FailpointPause::FailpointPause(const std::string& dir, std::string name) : name_(std::move(name)) {
  static std::atomic<int> counter{0};
  marker_dir_ = dir + "/failpoint-pause-" + std::to_string(++counter);
  make_dirs(marker_dir_);
}

std::map<std::string, std::string> FailpointPause::env() const {
  return {{"ETCDADM_FAILPOINTS", name_ + "=pause"}, {"ETCDADM_FAILPOINT_DIR", marker_dir_}};
}

bool FailpointPause::reached(std::chrono::milliseconds limit) const {
  std::string marker = name_;
  std::replace(marker.begin(), marker.end(), '/', '.');
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!path_exists(marker_dir_ + "/" + marker)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::string read_proc_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.clear();
      break;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::vector<std::string> processes_mentioning(const std::string& text) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = read_proc_file(entry.path() / "cmdline");
    if (cmdline.find(text) != std::string::npos) out.push_back(pid + ": " + cmdline);
  }
  return out;
}

std::set<std::string> socket_inodes_of(pid_t pid) {
  std::set<std::string> out;
  std::error_code gone;  // the process may have ended: no sockets
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", gone)) {
    std::error_code ec;
    std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) out.insert(target.substr(8, target.size() - 9));
  }
  return out;
}

std::vector<std::vector<std::string>> proc_net_rows(const std::string& table) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(read_file("/proc/net/" + table));
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<std::string> row;
    for (std::string f; fields >> f;) row.push_back(f);
    rows.push_back(std::move(row));
  }
  return rows;
}

bool has_temp_data_file(const std::string& store) {
  std::error_code ec;
  if (!std::filesystem::exists(store, ec)) return false;
  for (auto it = std::filesystem::recursive_directory_iterator(store, ec); !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(".etcd.backup", 0) == 0 && name.find(".tmp-") != std::string::npos) return true;
  }
  return false;
}

void load_keys(EtcdClient& client, const std::string& prefix, int count, size_t value_size, uint32_t seed) {
  std::mt19937 rng(seed);
  const char* alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (int i = 0; i < count;) {
    etcdserverpb::TxnRequest txn;
    for (int j = 0; j < 100 && i < count; ++j, ++i) {
      char key[32];
      std::snprintf(key, sizeof key, "%06d", i);
      std::string value(value_size, 'x');
      for (auto& c : value) c = alphabet[rng() % 62];
      auto* put = txn.add_success()->mutable_request_put();
      put->set_key(prefix + key);
      put->set_value(value);
    }
    client.txn(txn);
  }
}

namespace {

// Every key-value at `revision` (0 = latest), a page at a time, all pages at the same revision.
void for_each_kv(EtcdClient& client, int64_t revision, const std::function<void(const etcdserverpb::KeyValue&)>& each) {
  std::string from(1, '\0');
  for (;;) {
    etcdserverpb::RangeRequest req;
    req.set_key(from);
    req.set_range_end(std::string(1, '\0'));
    req.set_limit(1000);
    req.set_revision(revision);
    auto resp = client.range(req);
    if (revision == 0) revision = resp.header().revision();  // later pages read the same revision
    for (const auto& kv : resp.kvs()) each(kv);
    if (!resp.more() || resp.kvs_size() == 0) break;
    from = resp.kvs(resp.kvs_size() - 1).key() + std::string(1, '\0');
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> all_keys(EtcdClient& client, int64_t revision) {
  std::vector<std::pair<std::string, std::string>> out;
  for_each_kv(client, revision, [&](const etcdserverpb::KeyValue& kv) { out.emplace_back(kv.key(), kv.value()); });
  return out;
}

std::vector<std::string> all_key_fields(EtcdClient& client, int64_t revision) {
  std::vector<std::string> out;
  for_each_kv(client, revision, [&](const etcdserverpb::KeyValue& kv) {
    out.push_back(kv.key() + " c=" + std::to_string(kv.create_revision()) + " m=" + std::to_string(kv.mod_revision()) +
                  " v=" + std::to_string(kv.version()) + " l=" + std::to_string(kv.lease()) + " " + kv.value());
  });
  return out;
}

SilentListener::SilentListener() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  port_ = free_port();
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 16) != 0) {
    throw Error(ErrorKind::kInternal, "SilentListener: cannot listen on port " + std::to_string(port_));
  }
}

SilentListener::~SilentListener() {
  if (fd_ >= 0) ::close(fd_);
}

void enable_auth_with_root(const EtcdMember& member, const std::string& password) {
  RunOptions api3 = etcdctl_options();
  for (std::vector<std::string> args : {std::vector<std::string>{"user", "add", "root:" + password}, {"auth", "enable"}}) {
    args.insert(args.begin(), {"etcdctl", "--endpoints", member.client_url()});
    auto r = run_process(args, api3);
    if (r.exit_code != 0) throw Error(ErrorKind::kInternal, "etcdctl " + args[3] + " failed: " + r.output);
  }
}

int overwrite_in_place(const std::string& path, const std::string& value, const std::string& damaged) {
  std::string bytes = read_file(path);
  int copies = 0;
  for (size_t at = bytes.find(value); at != std::string::npos; at = bytes.find(value, at + value.size())) {
    bytes.replace(at, value.size(), damaged);
    ++copies;
  }
  if (copies > 0) write_file_atomic(path, bytes, 0600, /*overwrite=*/true);
  return copies;
}

std::string documented_alert_rules() {
  const std::string doc = read_file(std::string(ETCDADM_SOURCE_DIR) + "/docs/sidecar.md");
  const auto fence = doc.find("```yaml\ngroups:");
  if (fence == std::string::npos) return "";
  const auto start = doc.find('\n', fence) + 1;
  const auto end = doc.find("```", start);
  return end == std::string::npos ? "" : doc.substr(start, end - start);
}

HttpResponse http(const std::string& method, const std::string& url) {
  HttpClient client;
  HttpRequest req;
  req.method = method;
  req.url = url;
  return client.perform(req);
}

ScopedTmpfs::ScopedTmpfs(const std::string& path, const std::string& options) : path_(path) {
  make_dirs(path_);
  if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) != 0) {
    throw std::runtime_error("mount -t tmpfs -o " + options + " tmpfs " + path_ + ": " + std::strerror(errno));
  }
}

ScopedTmpfs::~ScopedTmpfs() { ::umount2(path_.c_str(), MNT_DETACH); }

void ScopedTmpfs::remount(const std::string& options) {
  if (::mount("tmpfs", path_.c_str(), "tmpfs", MS_REMOUNT, options.c_str()) != 0) {
    throw std::runtime_error("remount " + path_ + " " + options + ": " + std::strerror(errno));
  }
}

void ScopedTmpfs::remount_read_only() {
  if (::mount("tmpfs", path_.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
    throw std::runtime_error("remount " + path_ + " read-only: " + std::strerror(errno));
  }
}

}  // namespace etcdadm::test

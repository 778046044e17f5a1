#include "test/support/kube_apiserver.h"

#include <httplib.h>
#include <signal.h>

#include <random>
#include <stdexcept>
#include <thread>

#include "common/fs.h"
#include "test/support/object_servers.h"

namespace etcdadm::test {

namespace {

std::string join_comma(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

std::string random_token() {
  std::random_device rd;
  std::string t;
  for (int i = 0; i < 32; ++i) t += "0123456789abcdef"[rd() % 16];
  return t;
}

}  // namespace

KubeApiServer::KubeApiServer(KubeApiServerOptions options) : options_(std::move(options)) {
  const std::string binary = go_test_tool("kubernetes", "kube-apiserver");
  // The service-account signing key (required; any key the API server can sign with).
  // (SEC1 "EC PRIVATE KEY": the API server reads keys in that form or PKCS#1, not PKCS#8.)
  auto key = run_process({"openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", dir_ / "sa.key"});
  if (key.exit_code != 0) throw std::runtime_error("openssl ecparam -genkey: " + key.output);
  // kubectl and kubewatch authenticate with a bearer token of a system:masters user (RBAC lets
  // that group do anything); the server's certificate is its own self-signed one in --cert-dir.
  token_ = random_token();
  write_file_atomic(dir_ / "tokens.csv", token_ + ",etcdadm-test,etcdadm-test,\"system:masters\"\n", 0600);
  for (int attempt = 1;; ++attempt) {
    port_ = free_port();
    const std::string log = dir_ / "kube-apiserver.log";
    process_ = ChildProcess::start(
        {binary,
         "--etcd-servers=" + join_comma(options_.etcd_endpoints),
         "--etcd-cafile=" + options_.etcd_ca_file,
         "--etcd-certfile=" + options_.etcd_cert_file,
         "--etcd-keyfile=" + options_.etcd_key_file,
         "--bind-address=127.0.0.1",
         "--advertise-address=127.0.0.1",
         "--secure-port=" + std::to_string(port_),
         "--cert-dir=" + (dir_ / "serving"),
         "--token-auth-file=" + (dir_ / "tokens.csv"),
         "--service-account-issuer=https://kubernetes.default.svc",
         "--service-account-key-file=" + (dir_ / "sa.key"),
         "--service-account-signing-key-file=" + (dir_ / "sa.key"),
         "--service-cluster-ip-range=10.96.0.0/24",
         "--authorization-mode=RBAC",
         // Loopback may not be published in the kubernetes Endpoints; and etcdadm, not the API
         // server, owns compaction here (its compactor writes compact_rev_key at etcd's root).
         "--endpoint-reconciler-type=none",
         "--etcd-compaction-interval=0",
         // Values etcdctl can read.
         "--storage-media-type=application/json",
         "--v=2"},
        log);
    const auto deadline = std::chrono::steady_clock::now() + options_.start_limit;
    while (process_.running() && std::chrono::steady_clock::now() < deadline) {
      if (get("/readyz", std::chrono::milliseconds(1000)).first == 200) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (process_.running() && get("/readyz").first == 200) break;
    process_.stop(std::chrono::milliseconds(10000));
    // Another attempt only when the port was taken meanwhile.
    if (attempt == 3 || read_file(log).find("address already in use") == std::string::npos) {
      throw std::runtime_error("kube-apiserver did not become ready:\n" + tail_of(log));
    }
  }
  kubeconfig_ = dir_ / "kubeconfig";
  write_file_atomic(kubeconfig_,
                    "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: https://127.0.0.1:" +
                        std::to_string(port_) +
                        "\n    insecure-skip-tls-verify: true\nusers:\n- name: test\n  user:\n    token: " + token_ +
                        "\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n"
                        "current-context: test\n",
                    0600);
}

KubeApiServer::~KubeApiServer() { process_.stop(std::chrono::milliseconds(10000)); }

ProcessResult KubeApiServer::kubectl(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {go_test_tool("kubernetes", "kubectl"), "--kubeconfig", kubeconfig_};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.timeout = std::chrono::seconds(60);
  o.env = {{"HOME", dir_.path()}};
  return run_process(argv, o);
}

std::pair<int, std::string> KubeApiServer::get(const std::string& path, std::chrono::milliseconds timeout) const {
  httplib::SSLClient c("127.0.0.1", port_);
  c.enable_server_certificate_verification(false);
  c.set_connection_timeout(timeout);
  c.set_read_timeout(timeout);
  if (!token_.empty()) c.set_bearer_token_auth(token_);
  auto res = c.Get(path);
  if (!res) return {0, ""};
  return {res->status, res->body};
}

std::string KubeApiServer::log_tail() const { return tail_of(dir_ / "kube-apiserver.log"); }

KubeWatch::KubeWatch(const KubeApiServer& server, const std::string& ns, std::chrono::milliseconds write_every) {
  if (ns != "default") {
    auto created = server.kubectl({"create", "namespace", ns});
    if (created.exit_code != 0 && created.output.find("AlreadyExists") == std::string::npos) {
      throw std::runtime_error("kubectl create namespace " + ns + ": " + created.output);
    }
  }
  process_ = ChildProcess::start({go_test_tool("kubewatch"), "-kubeconfig", server.kubeconfig(), "-namespace", ns,
                                  "-out", dir_ / "summary.json", "-ready", dir_ / "ready", "-status",
                                  dir_ / "status.json", "-write-every",
                                  std::to_string(write_every.count()) + "ms"},
                                 dir_ / "kubewatch.log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!path_exists(dir_ / "ready")) {
    if (!process_.running() || std::chrono::steady_clock::now() > deadline) {
      process_.stop();
      stopped_ = true;
      throw std::runtime_error("kubewatch did not start:\n" + log_tail());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

KubeWatch::~KubeWatch() {
  if (!stopped_) process_.stop(std::chrono::milliseconds(15000));
}

nlohmann::json KubeWatch::stop() {
  stopped_ = true;
  const int code = process_.stop(std::chrono::milliseconds(15000));
  if (code != 0 || !path_exists(dir_ / "summary.json")) {
    throw std::runtime_error("kubewatch ended with " + std::to_string(code) + " and no summary:\n" + log_tail());
  }
  return nlohmann::json::parse(read_file(dir_ / "summary.json"));
}

nlohmann::json KubeWatch::status() const {
  try {
    return nlohmann::json::parse(read_file(dir_ / "status.json"));
  } catch (const std::exception&) {
    return nlohmann::json::object();
  }
}

std::string KubeWatch::log_tail() const { return tail_of(dir_ / "kubewatch.log"); }

}  // namespace etcdadm::test

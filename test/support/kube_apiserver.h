// A real kube-apiserver (k8s.io/kubernetes, built by scripts/go-test-tools.sh kubernetes) started on
// loopback against our etcd members with the client certificate etcdadm issued for it, and its
// clients: kubectl (same build) and kubewatch (test/go-tools/kubewatch: a writer, a raw watch and
// an informer recording what they saw). No kubelet, no nodes: the API server and its clients are
// what etcd serves. Facts behind the flags: ../shared/reference/adoption.md and
// docs/testing.md "A real kube-apiserver".
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "test/support/test_env.h"

namespace etcdadm::test {

struct KubeApiServerOptions {
  std::vector<std::string> etcd_endpoints;  // https://127.0.0.1:PORT of each member
  // The files it reads: as a stacked control plane's API server reads a host's certs dir (the CA
  // it trusts for etcd, and its client certificate and key, re-read on each new connection).
  std::string etcd_ca_file;
  std::string etcd_cert_file;
  std::string etcd_key_file;
  std::chrono::seconds start_limit{90};
};

class KubeApiServer {
 public:
  explicit KubeApiServer(KubeApiServerOptions options);
  ~KubeApiServer();
  KubeApiServer(const KubeApiServer&) = delete;
  KubeApiServer& operator=(const KubeApiServer&) = delete;

  const std::string& kubeconfig() const { return kubeconfig_; }
  int port() const { return port_; }
  pid_t pid() const { return process_.pid(); }
  // kubectl of the same build with this server's kubeconfig; a 60 s limit.
  ProcessResult kubectl(const std::vector<std::string>& args) const;
  // GET `path` (e.g. "/readyz?verbose"): the HTTP status (0 when nothing answered) and the body.
  std::pair<int, std::string> get(const std::string& path,
                                  std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) const;
  bool running() { return process_.running(); }
  std::string log_tail() const;

 private:
  KubeApiServerOptions options_;
  TempDir dir_;
  std::string kubeconfig_;
  std::string token_;
  ChildProcess process_;
  int port_ = 0;
};

// kubewatch against one API server, in one namespace (created if missing), until stop().
class KubeWatch {
 public:
  KubeWatch(const KubeApiServer& server, const std::string& ns,
            std::chrono::milliseconds write_every = std::chrono::milliseconds(0));
  ~KubeWatch();
  KubeWatch(const KubeWatch&) = delete;
  KubeWatch& operator=(const KubeWatch&) = delete;
  // What the clients have seen so far (the summary without "acked", at most 250 ms old; an empty
  // object before the first).
  nlohmann::json status() const;
  // SIGTERM, then its summary (the JSON documented in test/go-tools/kubewatch/main.go).
  nlohmann::json stop();
  std::string log_tail() const;

 private:
  TempDir dir_;
  ChildProcess process_;
  bool stopped_ = false;
};

}  // namespace etcdadm::test

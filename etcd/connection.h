// How to reach an etcd cluster: the etcdctl connection flags and their ETCDCTL_* variables.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace etcdadm {

struct ConnectionConfig {
  std::vector<std::string> endpoints{"127.0.0.1:2379"};
  std::string cacert;    // PEM file of the CA that signed the servers' certificates
  std::string cert;      // client certificate (PEM file) for client-cert auth
  std::string key;       // its private key
  std::string user;      // etcd user; "name:password" is accepted like etcdctl does
  std::string password;  // never logged
  std::chrono::milliseconds dial_timeout{2000};
  std::chrono::milliseconds command_timeout{5000};
  // etcdctl's --insecure-skip-tls-verify: TLS without checking the server's certificate (tests,
  // or a member whose certificate lacks the address used). Never the default.
  bool insecure_skip_tls_verify = false;

  bool tls_configured() const { return !cacert.empty() || !cert.empty() || insecure_skip_tls_verify; }
  // Splits "name:password" in `user` when no password was given separately.
  void normalise_user();
  // Checks the combination (cert without key, unreadable files ...). Throws kInvalidArgument.
  void validate() const;
};

// Fills fields from ETCDCTL_ENDPOINTS, ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY, ETCDCTL_USER,
// ETCDCTL_PASSWORD, ETCDCTL_DIAL_TIMEOUT, ETCDCTL_COMMAND_TIMEOUT, ETCDCTL_INSECURE_SKIP_TLS_VERIFY
// when they are set.
// Called before flags are applied, so flags win.
void apply_etcdctl_env(ConnectionConfig& config);

// One endpoint as gRPC needs it.
struct Endpoint {
  std::string url;     // as the user wrote it, for messages
  std::string target;  // host:port (or unix:///path) for gRPC
  bool tls = false;
};

// "https://h:p" -> TLS; "http://h:p" -> plaintext; "h:p" -> TLS when TLS files are configured
// (etcdctl's rule); "unix:///abs/path" -> plaintext over that socket (the drill's member).
Endpoint parse_endpoint(const std::string& url, bool tls_configured);

// Splits "a,b,c" (etcdctl's --endpoints form) into a list, trimming blanks.
std::vector<std::string> split_endpoints(const std::string& csv);

}  // namespace etcdadm

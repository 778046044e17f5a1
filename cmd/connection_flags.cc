#include "cmd/connection_flags.h"

#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "common/error.h"
#include "common/fs.h"
#include "common/timefmt.h"
#include "etcdadm/static_pod.h"

namespace etcdadm::cli {

void ConnectionFlags::add_to(CLI::App* a) {
  app = a;
  a->add_option("--endpoints", endpoints,
                "comma-separated etcd client URLs (default 127.0.0.1:2379; env ETCDCTL_ENDPOINTS)");
  a->add_option("--cacert", cacert, "CA bundle that verifies the servers (env ETCDCTL_CACERT)");
  a->add_option("--cert", cert, "client certificate for client-cert auth (env ETCDCTL_CERT)");
  a->add_option("--key", key, "client private key (env ETCDCTL_KEY)");
  a->add_option("--user", user, "username[:password] (env ETCDCTL_USER); asks for the password on a terminal");
  a->add_option("--password", password,
                "password (env ETCDCTL_PASSWORD; shows in `ps`: prefer --password-file or the env)");
  a->add_option("--password-file", password_file, "read the password from the first line of this file");
  a->add_flag("--insecure-skip-tls-verify", insecure_skip_tls_verify,
              "TLS to etcd without verifying the server certificate, as etcdctl's flag (env "
              "ETCDCTL_INSECURE_SKIP_TLS_VERIFY; tests only)");
  a->add_option("--kubeadm-manifest", kubeadm_manifest,
                "etcd's static pod manifest (kubeadm's /etc/kubernetes/manifests/etcd.yaml): the member's local "
                "client URL, its CA and kubeadm's health-check client certificate beside the CA, read from it "
                "(flags given as well win)");
  a->add_option("--dial-timeout", dial_timeout, "connection timeout, e.g. 2s (env ETCDCTL_DIAL_TIMEOUT)");
  a->add_option("--command-timeout", command_timeout, "per-request timeout, e.g. 5s (env ETCDCTL_COMMAND_TIMEOUT)");
}

// Reads a password from the terminal without echo, as etcdctl does for `--user name`.
static std::string prompt_password(const std::string& user) {
  std::fprintf(stderr, "Password for %s: ", user.c_str());
  std::fflush(stderr);
  termios old{};
  bool restore = ::tcgetattr(STDIN_FILENO, &old) == 0;
  if (restore) {
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);  // TCSAFLUSH would drop a password typed ahead
  }
  std::string password;
  std::getline(std::cin, password);
  if (restore) ::tcsetattr(STDIN_FILENO, TCSANOW, &old);
  std::fprintf(stderr, "\n");
  return password;
}

static std::chrono::milliseconds duration_flag(const std::string& name, const std::string& value) {
  auto d = parse_duration(value);
  if (!d || d->count() <= 0) {
    throw Error(ErrorKind::kInvalidArgument, "invalid " + name + " '" + value + "'",
                "use a duration such as 5s or 500ms");
  }
  return *d;
}

ConnectionConfig ConnectionFlags::resolve() const {
  ConnectionConfig c;
  apply_etcdctl_env(c);
  auto given = [&](const char* flag) { return app != nullptr && app->count(flag) > 0; };
  if (given("--kubeadm-manifest")) {
    const ConnectionConfig from = read_static_pod_etcd(kubeadm_manifest).connection();
    c.endpoints = from.endpoints;
    c.cacert = from.cacert;
    c.cert = from.cert;
    c.key = from.key;
  }
  if (given("--endpoints")) c.endpoints = split_endpoints(endpoints);
  if (given("--cacert")) c.cacert = cacert;
  if (given("--cert")) c.cert = cert;
  if (given("--key")) c.key = key;
  if (given("--user")) c.user = user;
  if (given("--password")) c.password = password;
  if (given("--dial-timeout")) c.dial_timeout = duration_flag("--dial-timeout", dial_timeout);
  if (given("--command-timeout")) c.command_timeout = duration_flag("--command-timeout", command_timeout);
  if (given("--insecure-skip-tls-verify")) c.insecure_skip_tls_verify = insecure_skip_tls_verify;
  c.normalise_user();
  if (!c.user.empty() && given("--password-file")) {
    std::string p = read_file(password_file);
    c.password = p.substr(0, p.find('\n'));
    if (!c.password.empty() && c.password.back() == '\r') c.password.pop_back();
    if (c.password.empty()) throw Error(ErrorKind::kInvalidArgument, "--password-file " + password_file + " is empty");
  }
  if (!c.user.empty() && c.password.empty() && ::isatty(STDIN_FILENO)) c.password = prompt_password(c.user);
  return c;
}

}  // namespace etcdadm::cli

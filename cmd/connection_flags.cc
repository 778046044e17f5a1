#include "cmd/connection_flags.h"

#include "common/error.h"
#include "common/timefmt.h"

namespace etcdadm::cli {

void ConnectionFlags::add_to(CLI::App* a) {
  app = a;
  a->add_option("--endpoints", endpoints, "comma-separated etcd client URLs (default 127.0.0.1:2379; env ETCDCTL_ENDPOINTS)");
  a->add_option("--cacert", cacert, "CA bundle that verifies the servers (env ETCDCTL_CACERT)");
  a->add_option("--cert", cert, "client certificate for client-cert auth (env ETCDCTL_CERT)");
  a->add_option("--key", key, "client private key (env ETCDCTL_KEY)");
  a->add_option("--user", user, "username[:password] (env ETCDCTL_USER)");
  a->add_option("--password", password, "password (env ETCDCTL_PASSWORD)");
  a->add_option("--dial-timeout", dial_timeout, "connection timeout, e.g. 2s (env ETCDCTL_DIAL_TIMEOUT)");
  a->add_option("--command-timeout", command_timeout, "per-request timeout, e.g. 5s (env ETCDCTL_COMMAND_TIMEOUT)");
}

static std::chrono::milliseconds duration_flag(const std::string& name, const std::string& value) {
  auto d = parse_duration(value);
  if (!d || d->count() <= 0) {
    throw Error(ErrorKind::kInvalidArgument, "invalid " + name + " '" + value + "'", "use a duration such as 5s or 500ms");
  }
  return *d;
}

ConnectionConfig ConnectionFlags::resolve() const {
  ConnectionConfig c;
  apply_etcdctl_env(c);
  auto given = [&](const char* flag) { return app != nullptr && app->count(flag) > 0; };
  if (given("--endpoints")) c.endpoints = split_endpoints(endpoints);
  if (given("--cacert")) c.cacert = cacert;
  if (given("--cert")) c.cert = cert;
  if (given("--key")) c.key = key;
  if (given("--user")) c.user = user;
  if (given("--password")) c.password = password;
  if (given("--dial-timeout")) c.dial_timeout = duration_flag("--dial-timeout", dial_timeout);
  if (given("--command-timeout")) c.command_timeout = duration_flag("--command-timeout", command_timeout);
  return c;
}

}  // namespace etcdadm::cli

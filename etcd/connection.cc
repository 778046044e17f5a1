#include "etcd/connection.h"

#include <unistd.h>

#include <cstdlib>
#include <regex>

#include "common/error.h"
#include "common/fs.h"
#include "common/openssl_ptr.h"
#include "common/text.h"
#include "common/timefmt.h"

namespace etcdadm {

namespace {

// Checks the TLS files a client connects with before any connection is tried: `cacert` holds at
// least one PEM certificate, `cert` is a PEM certificate and `key` the PEM private key that matches
// it. Throws kInvalidArgument naming the file (gRPC would only report "empty address list").
void check_client_tls_files(const std::string& cacert, const std::string& cert, const std::string& key) {
  if (!cacert.empty() && !parse_pem_cert(read_file(cacert))) {
    throw Error(ErrorKind::kInvalidArgument, "--cacert " + cacert + " holds no PEM certificate",
                "pass the PEM file of the CA that signed the etcd servers' certificates");
  }
  if (cert.empty() || key.empty()) return;
  X509Ptr x = parse_pem_cert(read_file(cert));
  if (!x)
    throw Error(ErrorKind::kInvalidArgument, "--cert " + cert + " is not a PEM certificate",
                "pass the client certificate (PEM)");
  KeyPtr k = parse_pem_key(read_file(key));
  if (!k)
    throw Error(ErrorKind::kInvalidArgument, "--key " + key + " is not a PEM private key",
                "pass the client key (PEM, unencrypted)");
  if (X509_check_private_key(x.get(), k.get()) != 1) {
    ERR_clear_error();
    throw Error(
        ErrorKind::kInvalidArgument, "--key " + key + " does not match the certificate --cert " + cert,
        "pass the key that belongs to this certificate (e.g. etcdctl-etcd-client.key with etcdctl-etcd-client.crt)");
  }
}

}  // namespace

void ConnectionConfig::normalise_user() {
  auto colon = user.find(':');
  if (password.empty() && colon != std::string::npos) {
    password = user.substr(colon + 1);
    user = user.substr(0, colon);
  }
}

void ConnectionConfig::validate() const {
  if (endpoints.empty()) throw Error(ErrorKind::kInvalidArgument, "no etcd endpoints given", "pass --endpoints");
  if (cert.empty() != key.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "--cert and --key must be given together");
  }
  for (const auto* f : {&cacert, &cert, &key}) {
    if (!f->empty() && ::access(f->c_str(), R_OK) != 0) {
      throw Error(ErrorKind::kInvalidArgument, "cannot read TLS file " + *f, "check the path and its permissions");
    }
  }
  check_client_tls_files(cacert, cert, key);
  // Every endpoint is checked before the first is dialled: a typo must not look like a DNS outage.
  for (const auto& e : endpoints) parse_endpoint(e, tls_configured());
  if (!user.empty() && password.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "user " + user + " given without a password",
                "pass --password-file FILE or set ETCDCTL_PASSWORD (run on a terminal, etcdadm asks for it); "
                "--password and --user name:password work too but show in `ps`");
  }
}

std::vector<std::string> split_endpoints(const std::string& csv) { return split_list(csv); }

static void env_duration(const char* name, std::chrono::milliseconds& out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return;
  auto d = parse_duration(v);
  if (!d)
    throw Error(ErrorKind::kInvalidArgument, std::string("cannot parse ") + name + "=" + v,
                "use a duration such as 5s");
  out = *d;
}

void apply_etcdctl_env(ConnectionConfig& config) {
  auto str = [](const char* name, std::string& out) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != 0) out = v;
  };
  if (const char* v = std::getenv("ETCDCTL_ENDPOINTS"); v != nullptr && *v != 0) config.endpoints = split_endpoints(v);
  str("ETCDCTL_CACERT", config.cacert);
  str("ETCDCTL_CERT", config.cert);
  str("ETCDCTL_KEY", config.key);
  str("ETCDCTL_USER", config.user);
  str("ETCDCTL_PASSWORD", config.password);
  env_duration("ETCDCTL_DIAL_TIMEOUT", config.dial_timeout);
  env_duration("ETCDCTL_COMMAND_TIMEOUT", config.command_timeout);
  if (const char* v = std::getenv("ETCDCTL_INSECURE_SKIP_TLS_VERIFY"); v != nullptr && *v != 0) {
    config.insecure_skip_tls_verify = std::string(v) == "true" || std::string(v) == "1";
  }
}

Endpoint parse_endpoint(const std::string& url, bool tls_configured) {
  Endpoint ep;
  ep.url = url;
  std::string rest = url;
  if (rest.rfind("unix://", 0) == 0) {
    // gRPC's own form for a socket by absolute path; a relative one would depend on the cwd.
    const std::string path = rest.substr(7);
    if (path.empty() || path.front() != '/' || path.size() >= 108) {
      throw Error(ErrorKind::kInvalidArgument, "malformed endpoint '" + url + "'",
                  "a unix socket endpoint is unix:///absolute/path (shorter than 108 bytes)");
    }
    ep.tls = false;
    ep.target = "unix://" + path;
    return ep;
  }
  if (rest.rfind("https://", 0) == 0) {
    ep.tls = true;
    rest = rest.substr(8);
  } else if (rest.rfind("http://", 0) == 0) {
    ep.tls = false;
    rest = rest.substr(7);
  } else if (rest.find("://") != std::string::npos) {
    throw Error(ErrorKind::kInvalidArgument, "unsupported endpoint scheme in " + url,
                "use http://host:port, https://host:port or unix:///path");
  } else {
    ep.tls = tls_configured;
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty() || rest.find('/') != std::string::npos) {
    throw Error(ErrorKind::kInvalidArgument, "malformed endpoint " + url,
                "expected host:port, e.g. https://10.0.0.1:2379");
  }
  // A bare host gets etcd's default client port.
  bool has_port = rest.back() != ']' && rest.find(':') != std::string::npos &&
                  (rest.front() != '[' || rest.find("]:") != std::string::npos);
  ep.target = has_port ? rest : rest + ":2379";
  // host: a DNS name or IPv4 address, or an IPv6 address in brackets; port: 1-65535.
  static const std::regex host_port(
      R"(^([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9_])?|\[[0-9A-Fa-f:.%a-zA-Z]+\]):([0-9]{1,5})$)");
  std::smatch m;
  if (!std::regex_match(ep.target, m, host_port) || std::stoi(m[3].str()) < 1 || std::stoi(m[3].str()) > 65535) {
    throw Error(ErrorKind::kInvalidArgument, "malformed endpoint '" + url + "'",
                "expected [http[s]://]host[:port], e.g. https://10.0.0.1:2379 (several: comma-separated)");
  }
  return ep;
}

}  // namespace etcdadm

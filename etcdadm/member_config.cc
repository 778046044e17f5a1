#include "etcdadm/member_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/text.h"
#include "etcd/etcd_version.h"

namespace etcdadm {

namespace {

const char* kDefaultConfigDir = "/etc/etcd";

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "etcd";
  std::string name(buf);
  return name.substr(0, name.find('.'));  // the short name, like `hostname -s`
}

// The source address the kernel picks for a route to the outside (no packet is sent: connect() on
// a UDP socket only chooses the route). Falls back to loopback on hosts without a default route.
std::string primary_ipv4() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return kIpv4Loopback;
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(53);
  ::inet_pton(AF_INET, "192.0.2.1", &dst.sin_addr);  // TEST-NET-1: routed like any public address
  std::string result = kIpv4Loopback;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    char text[INET_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)) != nullptr) {
      result = text;
    }
  }
  ::close(fd);
  return result;
}

void check_port(int port, const char* flag) {
  if (port <= 0 || port > 65535) throw Error(ErrorKind::kInvalidArgument, std::string(flag) + " must be 1-65535");
}

void check_absolute(const std::string& dir, const char* flag) {
  if (dir.empty() || dir[0] != '/') {
    throw Error(ErrorKind::kInvalidArgument, std::string(flag) + " must be an absolute path (got '" + dir + "')");
  }
}

}  // namespace

bool is_usable_member_name(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

std::string url_host(const std::string& address) {
  return address.find(':') != std::string::npos ? "[" + address + "]" : address;
}

bool is_member_loopback_address(const std::string& address) {
  return address == kIpv4Loopback || address == kIpv6Loopback;
}

InitSystemKind parse_init_system(const std::string& name) {
  if (name == "systemd") return InitSystemKind::kSystemd;
  if (name == "kubelet") return InitSystemKind::kKubelet;
  if (name == "process") return InitSystemKind::kProcess;
  throw Error(ErrorKind::kInvalidArgument, "unknown init system '" + name + "'", "use systemd, kubelet or process");
}

const char* init_system_name(InitSystemKind kind) {
  switch (kind) {
    case InitSystemKind::kSystemd:
      return "systemd";
    case InitSystemKind::kKubelet:
      return "kubelet";
    case InitSystemKind::kProcess:
      return "process";
  }
  return "?";
}

std::string MemberConfig::client_url() const {
  return "https://" + url_host(bind_address) + ":" + std::to_string(client_port);
}
std::string MemberConfig::peer_url() const {
  return "https://" + url_host(bind_address) + ":" + std::to_string(peer_port);
}
std::string MemberConfig::loopback_client_url() const {
  return "https://" + url_host(loopback_address) + ":" + std::to_string(client_port);
}

std::vector<std::string> MemberConfig::listen_client_urls() const {
  std::vector<std::string> urls = {client_url()};
  if (bind_address != loopback_address && bind_address != "0.0.0.0" && bind_address != "::")
    urls.push_back(loopback_client_url());
  return urls;
}

std::string MemberConfig::etcdctl_wrapper() const {
  return (config_dir == kDefaultConfigDir ? install_dir : config_dir) + "/etcdctl.sh";
}

void MemberConfig::complete() {
  if (name.empty()) name = host_name();
  if (bind_address.empty()) bind_address = primary_ipv4();
  if (!is_usable_member_name(name)) {
    throw Error(ErrorKind::kInvalidArgument, "member name '" + name + "' is not usable",
                "use letters, digits, '-', '_' or '.' (it goes into certificate names and URLs)");
  }
  if (!is_member_loopback_address(loopback_address)) {
    throw Error(ErrorKind::kInvalidArgument,
                "loopback address '" + loopback_address + "' is neither 127.0.0.1 nor ::1");
  }
  check_port(client_port, "--client-port");
  check_port(peer_port, "--peer-port");
  if (client_port == peer_port) throw Error(ErrorKind::kInvalidArgument, "--client-port and --peer-port are equal");
  check_absolute(install_dir, "--install-dir");
  check_absolute(certs_dir, "--certs-dir");
  check_absolute(data_dir, "--data-dir");
  check_absolute(config_dir, "--config-dir");
  if (service_name.empty() || service_name.find('/') != std::string::npos) {
    throw Error(ErrorKind::kInvalidArgument, "invalid --service-name '" + service_name + "'");
  }
}

namespace {
// A bundle left by an earlier rotation, whose CA the certs dir no longer holds, would refuse every
// current client: it counts only while its first certificate is the current CA.
std::string trusted_clients_ca(const MemberConfig& c) {
  std::error_code ec;
  if (!std::filesystem::exists(c.clients_ca_cert(), ec)) return c.ca_cert();
  try {
    const std::string ca = read_file(c.ca_cert());
    const std::string bundle = read_file(c.clients_ca_cert());
    const std::string head = trim_space(ca);
    if (!head.empty() && bundle.compare(0, head.size(), head) == 0) return c.clients_ca_cert();
  } catch (const Error&) {
  }
  return c.ca_cert();
}
}  // namespace

const std::vector<std::string>& etcd_cipher_suite_names() {
  static const std::vector<std::string> names = {
      // Go's tls.CipherSuites(): TLS 1.3's three, then TLS 1.2's.
      "TLS_AES_128_GCM_SHA256",
      "TLS_AES_256_GCM_SHA384",
      "TLS_CHACHA20_POLY1305_SHA256",
      "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
      "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
      "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
      "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
      "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
      "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
      "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
      "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
      "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
      "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
      // Go's tls.InsecureCipherSuites().
      "TLS_RSA_WITH_RC4_128_SHA",
      "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
      "TLS_RSA_WITH_AES_128_CBC_SHA",
      "TLS_RSA_WITH_AES_256_CBC_SHA",
      "TLS_RSA_WITH_AES_128_CBC_SHA256",
      "TLS_RSA_WITH_AES_128_GCM_SHA256",
      "TLS_RSA_WITH_AES_256_GCM_SHA384",
      "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
      "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
      "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
      "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
      "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
      // The names etcd maps by itself (Go's before 1.14).
      "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
      "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
  };
  return names;
}

std::vector<std::string> parse_cipher_suites(const std::string& list) {
  std::vector<std::string> suites;
  for (const auto& name : split_list(list)) {
    const auto& known = etcd_cipher_suite_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "--cipher-suites: '" + name.substr(0, 80) + "' is not a TLS cipher suite etcd knows",
                  "use Go's names, e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
    }
    if (std::find(suites.begin(), suites.end(), name) == suites.end()) suites.push_back(name);
  }
  return suites;
}

bool cipher_suites_fit_key(const std::vector<std::string>& suites, const std::string& key_algorithm) {
  const bool ecdsa_key = key_algorithm.rfind("ec", 0) == 0;
  for (const auto& s : suites) {
    if (s.find("_WITH_") == std::string::npos) continue;  // a TLS 1.3 name
    if ((s.rfind("TLS_ECDHE_ECDSA_", 0) == 0) == ecdsa_key) return true;
  }
  return false;
}

EnvVars member_env(const MemberConfig& c, const ClusterBootstrap& b) {
  std::string listen_clients;
  for (const auto& u : c.listen_client_urls()) listen_clients += (listen_clients.empty() ? "" : ",") + u;
  EnvVars env = {
      {"ETCD_NAME", c.name},
      {"ETCD_DATA_DIR", c.data_dir},
      {"ETCD_INITIAL_CLUSTER", b.initial_cluster},
      {"ETCD_INITIAL_CLUSTER_TOKEN", b.token},
      {"ETCD_INITIAL_CLUSTER_STATE", b.existing ? "existing" : "new"},
      {"ETCD_INITIAL_ADVERTISE_PEER_URLS", c.peer_url()},
      {"ETCD_LISTEN_PEER_URLS", c.peer_url()},
      {"ETCD_ADVERTISE_CLIENT_URLS", c.client_url()},
      {"ETCD_LISTEN_CLIENT_URLS", listen_clients},
      {"ETCD_CLIENT_CERT_AUTH", "true"},
      {"ETCD_TRUSTED_CA_FILE", trusted_clients_ca(c)},
      {"ETCD_CERT_FILE", c.cert("server")},
      {"ETCD_KEY_FILE", c.key("server")},
      {"ETCD_PEER_CLIENT_CERT_AUTH", "true"},
      {"ETCD_PEER_TRUSTED_CA_FILE", c.ca_cert()},
      {"ETCD_PEER_CERT_FILE", c.cert("peer")},
      {"ETCD_PEER_KEY_FILE", c.key("peer")},
      {"ETCD_STRICT_RECONFIG_CHECK", "true"},
  };
  if (c.quota_backend_bytes > 0) env.push_back({kQuotaBackendBytesVar, std::to_string(c.quota_backend_bytes)});
  if (!c.cipher_suites.empty()) {
    std::string suites;
    for (const auto& s : c.cipher_suites) suites += (suites.empty() ? "" : ",") + s;
    env.push_back({"ETCD_CIPHER_SUITES", suites});
  }
  for (auto& kv : corruption_check_env(c.version)) env.push_back(std::move(kv));
  for (const auto& kv : c.extra_env) {
    if (std::none_of(env.begin(), env.end(), [&](const auto& have) { return have.first == kv.first; }))
      env.push_back(kv);
  }
  return env;
}

std::string MemberConfig::image() const {
  std::string tag = image_tag_format;
  if (auto at = tag.find("{version}"); at != std::string::npos) tag.replace(at, 9, version);
  return image_repository + ":" + tag;
}

namespace {
constexpr const char* kInitialCorruptCheck = "ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK";
constexpr const char* kCompactHashCheck = "ETCD_EXPERIMENTAL_COMPACT_HASH_CHECK_ENABLED";
constexpr const char* kFeatureGates = "ETCD_FEATURE_GATES";
}  // namespace

EnvVars with_env_value(EnvVars vars, const std::string& name, const std::optional<std::string>& value) {
  std::erase_if(vars, [&](const auto& kv) { return kv.first == name; });
  if (value) vars.emplace_back(name, *value);
  return vars;
}

void set_member_env(const MemberConfig& config, const std::string& name, const std::optional<std::string>& value) {
  const EnvVars env = with_env_value(parse_env_file(read_file(config.env_file())), name, value);
  write_file_atomic(config.env_file(), render_env_file(env), 0600, /*overwrite=*/true);
}

EnvVars corruption_check_env(const std::string& version) {
  auto v = EtcdVersion::parse(version);
  // 3.4's initial check asks the peers' client URLs without TLS: under etcdadm's client-certificate
  // auth it gets no hash and passes ("no corruption", measured on 3.4.23), so it is not turned on.
  if (!v || *v < EtcdVersion{3, 5, 0}) return {};
  if (*v >= EtcdVersion{3, 6, 0}) return {{kFeatureGates, "InitialCorruptCheck=true,CompactHashCheck=true"}};
  EnvVars env = {{kInitialCorruptCheck, "true"}};
  if (*v >= EtcdVersion{3, 5, 5}) env.push_back({kCompactHashCheck, "true"});
  return env;
}

EnvVars with_corruption_checks(EnvVars env, const std::string& version) {
  std::erase_if(env, [](const std::pair<std::string, std::string>& kv) {
    return kv.first == kInitialCorruptCheck || kv.first == kCompactHashCheck || kv.first == kFeatureGates;
  });
  for (auto& kv : corruption_check_env(version)) env.push_back(std::move(kv));
  return env;
}

EnvVars without_initial_corruption_check(EnvVars env) {
  std::erase_if(env, [](const std::pair<std::string, std::string>& kv) { return kv.first == kInitialCorruptCheck; });
  for (auto& [name, value] : env) {
    if (name != kFeatureGates) continue;
    std::string kept;
    for (const auto& gate : split_list(value)) {
      if (gate != "InitialCorruptCheck=true") kept += (kept.empty() ? "" : ",") + gate;
    }
    value = kept;
  }
  std::erase_if(env, [](const std::pair<std::string, std::string>& kv) {
    return kv.first == kFeatureGates && kv.second.empty();
  });
  return env;
}

EnvVars etcdctl_env(const MemberConfig& c) {
  EnvVars env;
  // 3.5+'s etcdctl warns about ETCDCTL_API on every call, on the stderr that scripts read.
  if (wants_etcdctl_api_variable(c.version)) env.push_back({"ETCDCTL_API", "3"});
  for (auto& kv : EnvVars{{"ETCDCTL_ENDPOINTS", c.loopback_client_url()},
                          {"ETCDCTL_CACERT", c.ca_cert()},
                          {"ETCDCTL_CERT", c.cert("etcdctl-etcd-client")},
                          {"ETCDCTL_KEY", c.key("etcdctl-etcd-client")}}) {
    env.push_back(std::move(kv));
  }
  return env;
}

std::string render_env_file(const EnvVars& vars) {
  std::string out;
  for (const auto& [k, v] : vars) {
    // Names and values come from flags and from the cluster a member joins (member names, URLs):
    // a line break would add a line, and so a variable, of someone else's choosing.
    bool name_ok =
        !k.empty() && !(k[0] >= '0' && k[0] <= '9') &&
        k.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
    if (!name_ok)
      throw Error(ErrorKind::kInvalidArgument, "'" + k.substr(0, 64) + "' is not an environment variable name");
    if (v.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
      throw Error(ErrorKind::kInvalidArgument,
                  "the value for " + k + " holds a line break or NUL, which an env file cannot carry",
                  "check the member names and URLs given (or reported by the cluster being joined)");
    }
    out += k + "=" + v + "\n";
  }
  return out;
}

EnvVars parse_env_file(const std::string& text) {
  EnvVars vars;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    line = line.substr(b, line.find_last_not_of(" \t\r") - b + 1);
    if (line.rfind("export ", 0) == 0) line = line.substr(7);
    size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    vars.emplace_back(line.substr(0, eq), value);
  }
  return vars;
}

std::string env_value(const EnvVars& vars, const std::string& name) {
  for (const auto& [k, v] : vars) {
    if (k == name) return v;
  }
  return {};
}

void save_member_state(const MemberConfig& c) {
  nlohmann::json j = {{"layout", 1},
                      {"name", c.name},
                      {"version", c.version},
                      {"installDir", c.install_dir},
                      {"certsDir", c.certs_dir},
                      {"dataDir", c.data_dir},
                      {"configDir", c.config_dir},
                      {"bindAddress", c.bind_address},
                      {"loopbackAddress", c.loopback_address},
                      {"clientPort", c.client_port},
                      {"peerPort", c.peer_port},
                      {"serverCertExtraSans", c.server_cert_extra_sans},
                      {"initSystem", init_system_name(c.init_system)},
                      {"serviceName", c.service_name},
                      {"kubeletManifestDir", c.kubelet_manifest_dir},
                      {"imageRepository", c.image_repository},
                      {"imageTagFormat", c.image_tag_format},
                      {"podName", c.pod_name},
                      {"diskPriorities", c.disk_priorities},
                      {"quotaBackendBytes", c.quota_backend_bytes},
                      {"cipherSuites", c.cipher_suites},
                      {"clusterEndpoints", c.cluster_endpoints},
                      {"extraEnv", nlohmann::json::array()}};
  for (const auto& [name, value] : c.extra_env) j["extraEnv"].push_back({{"name", name}, {"value", value}});
  make_dirs(c.config_dir);
  write_file_atomic(c.state_file(), j.dump(2) + "\n", 0600, /*overwrite=*/true);
}

bool load_member_state(const std::string& config_dir, MemberConfig& c) {
  std::string path = config_dir + "/etcdadm.json";
  if (!path_exists(path)) return false;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
    c.name = j.at("name").get<std::string>();
    c.version = j.value("version", "");
    c.install_dir = j.at("installDir").get<std::string>();
    c.certs_dir = j.at("certsDir").get<std::string>();
    c.data_dir = j.at("dataDir").get<std::string>();
    c.config_dir = config_dir;
    c.bind_address = j.at("bindAddress").get<std::string>();
    c.loopback_address = j.value("loopbackAddress", std::string(kIpv4Loopback));
    c.client_port = j.at("clientPort").get<int>();
    c.peer_port = j.at("peerPort").get<int>();
    c.server_cert_extra_sans = j.value("serverCertExtraSans", std::vector<std::string>{});
    c.init_system = parse_init_system(j.at("initSystem").get<std::string>());
    c.service_name = j.value("serviceName", "etcd");
    c.kubelet_manifest_dir = j.value("kubeletManifestDir", c.kubelet_manifest_dir);
    c.image_repository = j.value("imageRepository", c.image_repository);
    c.disk_priorities = j.value("diskPriorities", true);
    c.quota_backend_bytes = j.value("quotaBackendBytes", int64_t{0});
    c.cipher_suites = j.value("cipherSuites", std::vector<std::string>{});
    c.cluster_endpoints = j.value("clusterEndpoints", std::vector<std::string>{});
    c.image_tag_format = j.value("imageTagFormat", c.image_tag_format);
    c.pod_name = j.value("podName", "");
    c.extra_env.clear();
    for (const auto& kv : j.value("extraEnv", nlohmann::json::array()))
      c.extra_env.emplace_back(kv.at("name").get<std::string>(), kv.at("value").get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCorrupt, "member state file " + path + " is unreadable: " + e.what(),
                "fix or remove it and pass the member flags explicitly");
  }
  if (!is_member_loopback_address(c.loopback_address)) {
    throw Error(
        ErrorKind::kCorrupt,
        "member state file " + path + " names loopback address '" + c.loopback_address + "', neither 127.0.0.1 nor ::1",
        "fix or remove it and pass the member flags explicitly");
  }
  return true;
}

}  // namespace etcdadm

#include "etcdadm/lifecycle/static_pod_member.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <tuple>

#include "common/error.h"
#include "common/fs.h"
#include "common/http_client.h"
#include "common/text.h"
#include "etcdadm/init_system.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/pki.h"

namespace etcdadm {

namespace {

// The flags member_env() sets from MemberConfig (or the bootstrap), and etcd's corruption checks,
// which it sets by version: a manifest's value of these is taken into MemberConfig or checked, never
// passed on as it is.
const std::set<std::string>& managed_flags() {
  static const std::set<std::string> flags = {"--name",
                                              "--data-dir",
                                              "--initial-cluster",
                                              "--initial-cluster-token",
                                              "--initial-cluster-state",
                                              "--initial-advertise-peer-urls",
                                              "--listen-peer-urls",
                                              "--advertise-client-urls",
                                              "--listen-client-urls",
                                              "--client-cert-auth",
                                              "--trusted-ca-file",
                                              "--cert-file",
                                              "--key-file",
                                              "--peer-client-cert-auth",
                                              "--peer-trusted-ca-file",
                                              "--peer-cert-file",
                                              "--peer-key-file",
                                              "--strict-reconfig-check",
                                              "--quota-backend-bytes",
                                              "--cipher-suites",
                                              "--feature-gates",
                                              "--experimental-initial-corrupt-check",
                                              "--experimental-compact-hash-check-enabled"};
  return flags;
}

// Flags etcdadm's manifest cannot carry over: the WAL in a folder etcdadm neither mounts nor moves
// with the data, a config file (etcd then ignores every variable etcdadm sets), a forced new
// cluster (applied again at every start), discovery instead of the initial cluster.
const std::set<std::string>& refused_flags() {
  static const std::set<std::string> flags = {"--wal-dir",         "--config-file",         "--force-new-cluster",
                                              "--discovery",       "--discovery-srv",       "--discovery-srv-name",
                                              "--discovery-token", "--discovery-endpoints", "--discovery-fallback",
                                              "--discovery-proxy"};
  return flags;
}

bool under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

struct HostPort {
  std::string host;
  int port = 0;
};

// "https://10.0.0.1:2379" -> {10.0.0.1, 2379}; an IPv6 literal keeps its brackets off.
HostPort https_host_port(const std::string& url, const std::string& what, const std::string& where) {
  UrlParts u;
  try {
    u = split_url(url);
  } catch (const Error&) {
    throw Error(ErrorKind::kInvalidArgument, where + ": " + what + " " + url + " is not a URL");
  }
  if (u.scheme != "https") {
    throw Error(ErrorKind::kInvalidArgument, where + ": " + what + " " + url + " is not https",
                "etcdadm runs members with TLS on client and peer URLs only");
  }
  const auto colon = u.authority.rfind(':');
  HostPort hp;
  if (colon == std::string::npos || u.authority.back() == ']') {
    throw Error(ErrorKind::kInvalidArgument, where + ": " + what + " " + url + " names no port");
  }
  hp.host = u.authority.substr(0, colon);
  if (hp.host.size() >= 2 && hp.host.front() == '[' && hp.host.back() == ']')
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  const std::string port = u.authority.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) == 0 || std::stoi(port) > 65535) {
    throw Error(ErrorKind::kInvalidArgument, where + ": " + what + " " + url + " names no port");
  }
  hp.port = std::stoi(port);
  return hp;
}

std::string folder_of(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }
std::string file_of(const std::string& path) { return std::filesystem::path(path).filename().string(); }

std::string env_name_of(const std::string& flag) {
  std::string name = "ETCD_";
  for (char c : flag.substr(2)) name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

EnvVars unmanaged_flags_of(const StaticPodEtcd& pod) {
  EnvVars out;
  for (const auto& [flag, value] : pod.flags) {
    if (!managed_flags().count(flag)) out.emplace_back(env_name_of(flag), value);
  }
  return out;
}

MemberConfig member_of_static_pod(const StaticPodEtcd& pod, MemberConfig base) {
  const std::string& where = pod.manifest_path;
  MemberConfig m = std::move(base);
  m.name = pod.name;
  m.data_dir = pod.data_dir;
  m.init_system = InitSystemKind::kKubelet;
  m.kubelet_manifest_dir = folder_of(pod.manifest_path);
  const std::string manifest_file = file_of(pod.manifest_path);
  if (manifest_file.size() <= 5 || manifest_file.substr(manifest_file.size() - 5) != ".yaml") {
    throw Error(ErrorKind::kInvalidArgument, where + ": etcdadm names a member's manifest <service-name>.yaml");
  }
  m.service_name = manifest_file.substr(0, manifest_file.size() - 5);
  m.pod_name = pod.pod_name;

  // etcdadm's manifest mounts each folder at its own path, and a stop waits for the host's path
  // to be let go of: a folder mounted elsewhere in the container is not taken.
  for (const auto& [flag, host] : {std::pair<std::string, std::string>{"--data-dir", pod.data_dir},
                                   std::pair<std::string, std::string>{"--cert-file", pod.cert_file}}) {
    if (pod.flag(flag) != host) {
      throw Error(ErrorKind::kInvalidArgument,
                  where + ": " + flag + " " + pod.flag(flag).value_or("") + " is the container's path of " + host +
                      " on the host, where etcdadm mounts every folder at its own path (as kubeadm does)");
    }
  }
  for (const auto& [flag, value] : pod.flags) {
    if (refused_flags().count(flag)) {
      throw Error(ErrorKind::kInvalidArgument,
                  where + ": etcd runs with " + flag + ", which etcdadm does not carry over",
                  "remove it from the manifest first, or keep this member out of etcdadm's hands");
    }
  }

  // Certificates: one folder, etcdadm's names.
  m.certs_dir = folder_of(pod.cert_file);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"--trusted-ca-file", pod.trusted_ca_file},
      {"--cert-file", pod.cert_file},
      {"--key-file", pod.key_file},
      {"--peer-trusted-ca-file", pod.peer_trusted_ca_file},
      {"--peer-cert-file", pod.peer_cert_file},
      {"--peer-key-file", pod.peer_key_file}};
  const std::vector<std::string> wanted = {m.ca_cert(), m.cert("server"), m.key("server"),
                                           m.ca_cert(), m.cert("peer"),   m.key("peer")};
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i].second != wanted[i]) {
      throw Error(ErrorKind::kInvalidArgument,
                  where + ": " + expected[i].first + " is " +
                      (expected[i].second.empty() ? std::string("not given") : expected[i].second) +
                      ", where etcdadm keeps it at " + wanted[i],
                  "etcdadm keeps a member's certificates in one folder as ca, server and peer .crt/.key (kubeadm's "
                  "layout)");
    }
  }
  for (const char* auth : {"--client-cert-auth", "--peer-client-cert-auth"}) {
    if (pod.flag(auth).value_or("false") != "true") {
      throw Error(ErrorKind::kInvalidArgument, where + ": " + auth + " is not on",
                  "etcdadm runs members with TLS client certificates required; turning it on would lock out the "
                  "member's clients");
    }
  }

  // Address and ports: one address advertised to clients and peers, as etcdadm's --bind-address.
  if (pod.initial_advertise_peer_urls.size() != 1 || pod.advertise_client_urls.size() != 1) {
    throw Error(ErrorKind::kInvalidArgument, where +
                                                 ": etcdadm advertises one client URL and one peer URL, the manifest " +
                                                 std::to_string(pod.advertise_client_urls.size()) + " and " +
                                                 std::to_string(pod.initial_advertise_peer_urls.size()));
  }
  const HostPort client = https_host_port(pod.advertise_client_urls.front(), "--advertise-client-urls", where);
  const HostPort peer =
      https_host_port(pod.initial_advertise_peer_urls.front(), "--initial-advertise-peer-urls", where);
  if (client.host != peer.host) {
    throw Error(ErrorKind::kInvalidArgument, where + ": clients are told " + client.host + " and peers " + peer.host +
                                                 ", where etcdadm advertises one address to both");
  }
  m.bind_address = client.host;
  m.client_port = client.port;
  m.peer_port = peer.port;
  // kubeadm listens on the loopback of the advertised address's family: [::1] on an IPv6 control
  // plane. etcdadm's tools then reach the member there too.
  const std::string ipv6_loopback = "https://" + url_host(kIpv6Loopback) + ":" + std::to_string(client.port);
  if (std::find(pod.listen_client_urls.begin(), pod.listen_client_urls.end(), ipv6_loopback) !=
      pod.listen_client_urls.end())
    m.loopback_address = kIpv6Loopback;
  const std::vector<std::string> listen_clients = m.listen_client_urls();
  if (std::set<std::string>(pod.listen_client_urls.begin(), pod.listen_client_urls.end()) !=
      std::set<std::string>(listen_clients.begin(), listen_clients.end())) {
    throw Error(ErrorKind::kInvalidArgument, where + ": etcd listens for clients on " +
                                                 join_list(pod.listen_client_urls) +
                                                 ", where etcdadm would listen on " + join_list(listen_clients));
  }
  if (const auto listen_peers = pod.flag("--listen-peer-urls"); listen_peers && *listen_peers != m.peer_url()) {
    throw Error(ErrorKind::kInvalidArgument, where + ": etcd listens for peers on " + *listen_peers +
                                                 ", where etcdadm would listen on " + m.peer_url());
  }

  // Version and image: the image's tag is what runs (an image pinned by digest alone says nothing
  // etcdadm could write the next version's image from).
  const std::string image_says = image_version(pod.image);
  if (image_says.empty()) {
    throw Error(ErrorKind::kInvalidArgument, where + ": the image " + pod.image + " names no etcd version in its tag",
                "etcdadm writes the next version's image from the tag (registry.k8s.io/etcd:3.6.4-0)");
  }
  if (!m.version.empty() && m.version != image_says) {
    throw Error(ErrorKind::kInvalidArgument,
                where + ": --version " + m.version + ", but the manifest runs etcd " + image_says +
                    " (its image's tag): taking it over as " + m.version + " would change its version unplanned",
                "leave --version out; change the version with `etcdadm seed --version` once adopted");
  }
  m.version = image_says;
  const auto colon = pod.image.rfind(':');
  m.image_repository = pod.image.substr(0, colon);
  std::string tag = pod.image.substr(colon + 1);
  tag.replace(tag.find(image_says), image_says.size(), "{version}");
  m.image_tag_format = tag;

  if (const auto q = pod.flag("--quota-backend-bytes")) {
    try {
      m.quota_backend_bytes = std::stoll(*q);
    } catch (const std::exception&) {
      throw Error(ErrorKind::kInvalidArgument, where + ": --quota-backend-bytes " + *q + " is not a number");
    }
  }
  if (const auto suites = pod.flag("--cipher-suites")) m.cipher_suites = parse_cipher_suites(*suites);
  if (const auto gates = pod.flag("--feature-gates")) {
    for (const auto& gate : split_list(*gates)) {
      if (gate != "InitialCorruptCheck=true" && gate != "CompactHashCheck=true") {
        throw Error(ErrorKind::kInvalidArgument,
                    where + ": --feature-gates sets " + gate +
                        ", where etcdadm sets only InitialCorruptCheck=true "
                        "and CompactHashCheck=true (its corruption checks)",
                    "remove it from the manifest first, or keep this member out of etcdadm's hands");
      }
    }
  }
  if (!pod.env_from.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                where + ": the etcd container takes " + join_list(pod.env_from) +
                    " from elsewhere (valueFrom), which etcdadm's env file cannot hold",
                "give it a value in the manifest first, or keep this member out of etcdadm's hands");
  }
  m.extra_env = unmanaged_flags_of(pod);
  // The container's own variables (kubeadm's extraEnvs) go on as they are, after the flags' (etcd
  // takes a flag over its variable; a variable etcdadm sets itself is etcdadm's).
  for (const auto& kv : pod.env) {
    if (std::none_of(m.extra_env.begin(), m.extra_env.end(), [&](const auto& have) { return have.first == kv.first; }))
      m.extra_env.push_back(kv);
  }
  for (size_t i = 0; i < m.extra_env.size(); ++i) {
    const std::string& value = m.extra_env[i].second;
    if (!value.empty() && value[0] == '/' && !under(value, m.data_dir) && !under(value, m.certs_dir)) {
      throw Error(ErrorKind::kInvalidArgument,
                  where + ": " + m.extra_env[i].first + " is " + value +
                      ", a path outside the data and certificates folders, which etcdadm's manifest does not mount",
                  "move it into " + m.certs_dir + ", or remove it from the manifest first");
    }
  }
  m.complete();
  return m;
}

StaticPodTakeOver take_over_static_pod_member(const MemberConfig& member, const StaticPodEtcd& pod) {
  StaticPodTakeOver r;
  MemberConfig recorded;
  if (load_member_state(member.config_dir, recorded)) {
    r.already = true;
    return r;
  }
  r.issued = ensure_member_certs(member_pki_spec(member));
  for (const auto& stem : r.issued) r.written.push_back(member.cert(stem));

  ClusterBootstrap bootstrap;
  bootstrap.initial_cluster = pod.flag("--initial-cluster").value_or(member.name + "=" + member.peer_url());
  bootstrap.token = pod.flag("--initial-cluster-token").value_or("etcd-cluster");  // etcd's default
  bootstrap.existing = true;  // its data exists: etcd ignores the bootstrap flags from now on
  make_dirs(member.config_dir, 0700);
  write_file_atomic(member.env_file(), render_env_file(member_env(member, bootstrap)), 0600, /*overwrite=*/true);
  r.written.push_back(member.env_file());
  write_etcdctl_files(member);
  r.written.push_back(member.etcdctl_env_file());
  save_member_state(member);
  r.written.push_back(member.state_file());
  spdlog::info("took over the member {} runs from {}: wrote {} (the manifest is left as it is)", member.name,
               pod.manifest_path, join_list(r.written));
  return r;
}

MemberConfig static_pod_member(const std::string& manifest, const MemberConfig& base) {
  MemberConfig recorded;
  if (load_member_state(base.config_dir, recorded)) {
    // Taken over before. While the manifest is still kubeadm's (not written from this config
    // dir), it must describe the member recorded: a state file of another member, or a manifest
    // kubeadm wrote again since (kubeadm upgrade), would otherwise be run as the recorded member.
    if (path_exists(manifest) &&
        read_file(manifest).find("etcdadm.io/config-dir: \"" + base.config_dir + "\"") == std::string::npos) {
      MemberConfig wanted = base;
      wanted.version.clear();
      const MemberConfig now = member_of_static_pod(read_static_pod_etcd(manifest), wanted);
      const std::vector<std::tuple<const char*, std::string, std::string>> fields = {
          {"name", recorded.name, now.name},
          {"data dir", recorded.data_dir, now.data_dir},
          {"certificates folder", recorded.certs_dir, now.certs_dir},
          {"peer URL", recorded.peer_url(), now.peer_url()},
          {"client URL", recorded.client_url(), now.client_url()},
          {"etcd version", recorded.version, now.version},
          {"manifest", kubelet_manifest_path(recorded), kubelet_manifest_path(now)}};
      for (const auto& [what, was, is] : fields) {
        if (was != is) {
          throw Error(ErrorKind::kInvalidArgument,
                      manifest + " runs " + what + " " + is + ", where the member etcdadm took over (" +
                          recorded.state_file() + ") has " + was,
                      "kubeadm wrote the manifest again (kubeadm upgrade without --etcd-upgrade=false?), or " +
                          base.config_dir + " is another member's: set it right, or remove " + recorded.state_file() +
                          " to take the member over again");
        }
      }
    }
    return recorded;
  }
  const StaticPodEtcd pod = read_static_pod_etcd(manifest);
  MemberConfig member = member_of_static_pod(pod, base);
  take_over_static_pod_member(member, pod);
  return member;
}

}  // namespace etcdadm

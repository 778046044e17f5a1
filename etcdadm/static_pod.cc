#include "etcdadm/static_pod.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "common/text.h"
#include "etcd/etcd_version.h"

namespace etcdadm {

namespace {

constexpr size_t kManifestLimit = 1 << 20;  // kubeadm's is about 3 KiB

std::string scalar(const YAML::Node& n, const std::string& what, const std::string& where) {
  if (!n || !n.IsScalar()) throw Error(ErrorKind::kCorrupt, where + ": " + what + " is not a string");
  return n.Scalar();
}

// The etcd container: the one named "etcd", else the only one whose command starts with etcd.
YAML::Node etcd_container(const YAML::Node& containers, const std::string& where) {
  if (!containers || !containers.IsSequence())
    throw Error(ErrorKind::kCorrupt, where + ": spec.containers is not a list");
  std::optional<YAML::Node> found;  // (a default YAML::Node is a defined null, not "none")
  for (const auto& c : containers) {
    if (!c.IsMap()) throw Error(ErrorKind::kCorrupt, where + ": a container is not a mapping");
    if (c["name"] && c["name"].IsScalar() && c["name"].Scalar() == "etcd") return c;
    const YAML::Node cmd = c["command"];
    if (cmd && cmd.IsSequence() && cmd.size() > 0 && cmd[0].IsScalar() &&
        std::filesystem::path(cmd[0].Scalar()).filename() == "etcd") {
      found.emplace(c);
    }
  }
  if (!found) throw Error(ErrorKind::kCorrupt, where + ": no container runs etcd (none is named etcd)");
  return *found;
}

// Container path -> host path through the container's volumeMounts and the pod's hostPath volumes.
class VolumeMap {
 public:
  VolumeMap(const YAML::Node& pod_spec, const YAML::Node& container, const std::string& where) {
    std::map<std::string, std::string> host_paths;  // volume name -> hostPath.path
    if (const YAML::Node volumes = pod_spec["volumes"]; volumes && volumes.IsSequence()) {
      for (const auto& v : volumes) {
        if (!v.IsMap() || !v["hostPath"] || !v["hostPath"].IsMap()) continue;  // not a host path: not reachable
        host_paths[scalar(v["name"], "a volume's name", where)] = scalar(v["hostPath"]["path"], "a hostPath", where);
      }
    }
    if (const YAML::Node mounts = container["volumeMounts"]; mounts && mounts.IsSequence()) {
      for (const auto& m : mounts) {
        if (!m.IsMap()) continue;
        const auto it = host_paths.find(scalar(m["name"], "a volumeMount's name", where));
        if (it != host_paths.end()) mounts_.emplace_back(scalar(m["mountPath"], "a mountPath", where), it->second);
      }
    }
  }
  // nullopt: no hostPath volume holds it (the container's own filesystem).
  std::optional<std::string> host_path(const std::string& container_path) const {
    const std::pair<std::string, std::string>* best = nullptr;
    for (const auto& m : mounts_) {
      const std::string& at = m.first;
      const bool under =
          container_path == at || (container_path.size() > at.size() && container_path.compare(0, at.size(), at) == 0 &&
                                   (at.back() == '/' || container_path[at.size()] == '/'));
      if (under && (best == nullptr || at.size() > best->first.size())) best = &m;
    }
    if (best == nullptr) return std::nullopt;
    return best->second + container_path.substr(best->first.size());
  }

 private:
  std::vector<std::pair<std::string, std::string>> mounts_;  // mountPath -> host path
};

}  // namespace

std::optional<std::string> StaticPodEtcd::flag(const std::string& n) const {
  const auto it = flags.find(n);
  if (it == flags.end()) return std::nullopt;
  return it->second;
}

std::string StaticPodEtcd::local_client_url() const {
  for (const auto& u : listen_client_urls) {
    if (u.find("://127.") != std::string::npos || u.find("://[::1]") != std::string::npos ||
        u.find("://localhost") != std::string::npos)
      return u;
  }
  return advertise_client_urls.empty() ? listen_client_urls.front() : advertise_client_urls.front();
}

ConnectionConfig StaticPodEtcd::connection() const {
  ConnectionConfig c;
  c.endpoints = {local_client_url()};
  if (c.endpoints.front().rfind("https://", 0) != 0) {
    throw Error(ErrorKind::kInvalidArgument,
                manifest_path + ": the member serves clients on " + c.endpoints.front() +
                    ", not HTTPS: give --endpoints (and no certificates) instead of the manifest");
  }
  if (trusted_ca_file.empty()) {
    throw Error(ErrorKind::kInvalidArgument, manifest_path + ": the etcd command has no --trusted-ca-file");
  }
  c.cacert = trusted_ca_file;
  const std::string dir = std::filesystem::path(trusted_ca_file).parent_path().string();
  c.cert = dir + "/healthcheck-client.crt";
  c.key = dir + "/healthcheck-client.key";
  for (const auto& f : {c.cacert, c.cert, c.key}) {
    if (!path_exists(f)) {
      throw Error(ErrorKind::kInvalidArgument,
                  manifest_path + ": " + f +
                      " does not exist on this host (kubeadm's health-check client pair sits "
                      "beside the etcd CA)",
                  "kubeadm init phase certs etcd-healthcheck-client, or give --cacert, --cert and --key");
    }
  }
  return c;
}

StaticPodEtcd parse_static_pod_etcd(const std::string& text, const std::string& where) {
  YAML::Node pod;
  try {
    pod = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(ErrorKind::kCorrupt, where + ": not YAML: " + e.what());
  }
  if (!pod.IsMap() || !pod["kind"] || !pod["kind"].IsScalar() || pod["kind"].Scalar() != "Pod" || !pod["spec"] ||
      !pod["spec"].IsMap()) {
    throw Error(ErrorKind::kCorrupt, where + ": not a Pod manifest (kind: Pod with a spec)");
  }
  const YAML::Node spec = pod["spec"];
  const YAML::Node container = etcd_container(spec["containers"], where);
  StaticPodEtcd e;
  e.manifest_path = where;
  if (pod["metadata"] && pod["metadata"].IsMap() && pod["metadata"]["name"])
    e.pod_name = scalar(pod["metadata"]["name"], "the pod's name", where);
  if (container["image"]) e.image = scalar(container["image"], "the etcd container's image", where);
  if (const YAML::Node env = container["env"]; env && !env.IsNull()) {
    if (!env.IsSequence()) throw Error(ErrorKind::kCorrupt, where + ": the etcd container's env is not a list");
    for (const auto& v : env) {
      if (!v.IsMap() || !v["name"]) throw Error(ErrorKind::kCorrupt, where + ": an env entry has no name");
      const std::string name = scalar(v["name"], "an env entry's name", where);
      if (v["valueFrom"]) {
        e.env_from.push_back(name);
      } else {
        e.env.emplace_back(name, v["value"] ? scalar(v["value"], "the value of env " + name, where) : "");
      }
    }
  }
  for (const char* part : {"command", "args"}) {
    const YAML::Node list = container[part];
    if (!list) continue;
    if (!list.IsSequence())
      throw Error(ErrorKind::kCorrupt, where + ": the etcd container's " + part + " is not a list");
    for (const auto& a : list) e.command.push_back(scalar(a, std::string("an item of ") + part, where));
  }
  if (e.command.empty()) throw Error(ErrorKind::kCorrupt, where + ": the etcd container has no command");
  for (size_t i = 1; i < e.command.size(); ++i) {
    const std::string& a = e.command[i];
    if (a.rfind("-", 0) != 0 || a.find_first_not_of('-') == std::string::npos) continue;
    const std::string bare = "--" + a.substr(a.find_first_not_of('-'));
    if (const auto eq = bare.find('='); eq != std::string::npos) {
      e.flags[bare.substr(0, eq)] = bare.substr(eq + 1);
    } else if (i + 1 < e.command.size() && e.command[i + 1].rfind("-", 0) != 0) {
      e.flags[bare] = e.command[++i];
    } else {
      e.flags[bare] = "true";
    }
  }
  const VolumeMap volumes(spec, container, where);
  auto host = [&](const char* flag, bool required) -> std::string {
    const auto value = e.flag(flag);
    if (!value || value->empty()) {
      if (required) throw Error(ErrorKind::kCorrupt, where + ": the etcd command has no " + flag);
      return "";
    }
    if (auto mapped = volumes.host_path(*value)) return *mapped;
    if (required) {
      throw Error(ErrorKind::kCorrupt,
                  where + ": " + flag + " " + *value + " is on no hostPath volume of the pod: it is not on this host");
    }
    return *value;
  };
  e.name = e.flag("--name").value_or("default");
  e.data_dir = host("--data-dir", true);
  e.trusted_ca_file = host("--trusted-ca-file", false);
  e.cert_file = host("--cert-file", false);
  e.key_file = host("--key-file", false);
  e.peer_trusted_ca_file = host("--peer-trusted-ca-file", false);
  e.peer_cert_file = host("--peer-cert-file", false);
  e.peer_key_file = host("--peer-key-file", false);
  e.listen_client_urls = split_list(e.flag("--listen-client-urls").value_or(""));
  e.advertise_client_urls = split_list(e.flag("--advertise-client-urls").value_or(""));
  e.initial_advertise_peer_urls = split_list(e.flag("--initial-advertise-peer-urls").value_or(""));
  if (e.listen_client_urls.empty())
    throw Error(ErrorKind::kCorrupt, where + ": the etcd command has no --listen-client-urls");
  return e;
}

std::string image_version(const std::string& image) {
  const auto colon = image.rfind(':');
  if (colon == std::string::npos || image.find('/', colon) != std::string::npos) return "";
  std::string tag = image.substr(colon + 1);
  if (!tag.empty() && tag[0] == 'v') tag.erase(0, 1);
  tag = tag.substr(0, tag.find('-'));
  return EtcdVersion::parse(tag) ? tag : "";
}

StaticPodEtcd read_static_pod_etcd(const std::string& path) {
  if (!path_exists(path)) {
    throw Error(ErrorKind::kNotFound, path + " does not exist",
                "kubeadm writes its etcd's manifest to /etc/kubernetes/manifests/etcd.yaml");
  }
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > kManifestLimit) {
    throw Error(ErrorKind::kCorrupt, path + " is " + std::to_string(size) + " bytes: no etcd manifest is that large");
  }
  return parse_static_pod_etcd(read_file(path), path);
}

}  // namespace etcdadm

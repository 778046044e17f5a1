// An etcd member run by the kubelet from a static pod manifest, as the manifest describes it:
// kubeadm's stacked etcd (/etc/kubernetes/manifests/etcd.yaml, written by `kubeadm init phase
// etcd local` and `kubeadm join`), or any pod whose etcd container passes etcd its flags on the
// command line. The paths in the command are the container's: each is mapped to the host through
// the pod's hostPath volumes (kubeadm mounts each at its own path, so the two are the same there).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "etcd/connection.h"

namespace etcdadm {

struct StaticPodEtcd {
  std::string manifest_path;
  std::string pod_name;                      // metadata.name ("etcd"; "" when absent)
  std::string image;                         // "registry.k8s.io/etcd:3.7.0-0"
  std::vector<std::string> command;          // the etcd container's command then args, as written
  std::map<std::string, std::string> flags;  // "--name" -> "cp1", from --flag=value or --flag value
  // The container's env entries with a value (kubeadm's etcd.local.extraEnvs), in order; and the
  // names of those taken from elsewhere (valueFrom: a secret, a field), which have no value here.
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> env_from;
  // Read from `flags`, host paths (mapped through the volumes):
  std::string name;
  std::string data_dir;
  std::vector<std::string> listen_client_urls;
  std::vector<std::string> advertise_client_urls;
  std::vector<std::string> initial_advertise_peer_urls;
  std::string trusted_ca_file;  // the clients' CA (--trusted-ca-file)
  std::string cert_file, key_file;
  std::string peer_trusted_ca_file, peer_cert_file, peer_key_file;

  // The flag's value; nullopt when the command does not pass it.
  std::optional<std::string> flag(const std::string& name) const;
  // The client URL to ask this member through from its own host: the first listen URL on a
  // loopback address, else the first advertised one.
  std::string local_client_url() const;
  // How this host's tools reach the member: local_client_url(), the clients' CA, and kubeadm's
  // health-check client pair beside it (healthcheck-client.crt/.key in the CA's folder: kubeadm
  // issues it for exactly this, and etcd with --client-cert-auth takes any certificate its CA
  // signed). kInvalidArgument when the member serves plain HTTP or the pair is missing.
  ConnectionConfig connection() const;
};

// The etcd version an image's tag names: "registry.k8s.io/etcd:3.7.0-0" and
// "quay.io/coreos/etcd:v3.7.0" -> "3.7.0"; "" when the tag is no etcd version.
std::string image_version(const std::string& image);

// Reads and checks `path`. kNotFound when it does not exist; kCorrupt (naming the file and what is
// wrong) when it is no pod, has no etcd container, or lacks --data-dir or a client URL.
StaticPodEtcd read_static_pod_etcd(const std::string& path);
// The same, from the manifest's text (`where` names it in errors).
StaticPodEtcd parse_static_pod_etcd(const std::string& text, const std::string& where);

}  // namespace etcdadm

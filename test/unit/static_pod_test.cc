// Reading an etcd static pod manifest (etcdadm/static_pod.h): flags in both of etcd's forms, paths
// mapped to the host through hostPath volumes, and every kind of bad manifest refused by name.
// kubeadm's own manifest is read by the e2e tests, from kubeadm itself.
#include <gtest/gtest.h>

#include "common/error.h"
#include "etcdadm/static_pod.h"

namespace etcdadm {
namespace {

// A pod in kubeadm's shape, its certificates mounted from elsewhere on the host.
constexpr const char* kPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - name: sidecar
    image: example/sidecar
    command: ["sleep", "infinity"]
  - name: etcd
    image: registry.k8s.io/etcd:3.7.0-0
    command:
    - etcd
    - --advertise-client-urls=https://10.0.0.5:2379
    - --cert-file=/etc/kubernetes/pki/etcd/server.crt
    - --data-dir=/var/lib/etcd
    - --listen-client-urls=https://10.0.0.5:2379,https://127.0.0.1:2379
    - --name=cp1
    - --trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt
    - --initial-advertise-peer-urls
    - https://10.0.0.5:2380
    - --client-cert-auth
    volumeMounts:
    - mountPath: /var/lib/etcd
      name: etcd-data
    - mountPath: /etc/kubernetes/pki/etcd
      name: etcd-certs
  hostNetwork: true
  volumes:
  - hostPath:
      path: /srv/pki/etcd
      type: DirectoryOrCreate
    name: etcd-certs
  - hostPath:
      path: /var/lib/etcd
    name: etcd-data
)";

TEST(StaticPod, TheEtcdContainersFlagsAndItsPathsOnTheHost) {
  const StaticPodEtcd e = parse_static_pod_etcd(kPod, "etcd.yaml");
  EXPECT_EQ(e.image, "registry.k8s.io/etcd:3.7.0-0");
  EXPECT_EQ(e.name, "cp1");
  EXPECT_EQ(e.data_dir, "/var/lib/etcd");
  EXPECT_EQ(e.trusted_ca_file, "/srv/pki/etcd/ca.crt");
  EXPECT_EQ(e.cert_file, "/srv/pki/etcd/server.crt");
  EXPECT_EQ(e.local_client_url(), "https://127.0.0.1:2379");
  EXPECT_EQ(e.initial_advertise_peer_urls, std::vector<std::string>{"https://10.0.0.5:2380"});
  EXPECT_EQ(e.flag("--client-cert-auth"), "true");
  EXPECT_EQ(e.flag("--peer-cert-file"), std::nullopt);
  EXPECT_EQ(e.command.size(), 10u);
  // The health-check pair is looked for beside the CA, on the host.
  try {
    (void)e.connection();
    FAIL() << "no such files here";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(err.what()).find("/srv/pki/etcd/"), std::string::npos) << err.what();
  }
}

TEST(StaticPod, ABadManifestIsRefusedByName) {
  auto refused = [](const std::string& text, const char* expected) {
    try {
      (void)parse_static_pod_etcd(text, "m.yaml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << expected << " in: " << e.what();
    }
  };
  refused("kind: Pod\nspec: [\n", "m.yaml: not YAML");
  refused("kind: Deployment\nspec: {}\n", "not a Pod manifest");
  refused("- a\n- b\n", "not a Pod manifest");
  refused("kind: Pod\nspec:\n  containers: 3\n", "spec.containers is not a list");
  refused("kind: Pod\nspec:\n  containers:\n  - name: x\n    command: [sleep]\n", "no container runs etcd");
  refused("kind: Pod\nspec:\n  containers:\n  - name: etcd\n    command: {a: b}\n", "command is not a list");
  refused("kind: Pod\nspec:\n  containers:\n  - name: etcd\n    command: [etcd, [x]]\n", "an item of command is not a string");
  refused("kind: Pod\nspec:\n  containers:\n  - name: etcd\n    command: [etcd, --listen-client-urls=https://127.0.0.1:2379]\n",
          "no --data-dir");
  refused("kind: Pod\nspec:\n  containers:\n  - name: etcd\n    command: [etcd, --data-dir=/var/lib/etcd, "
          "--listen-client-urls=https://127.0.0.1:2379]\n",
          "--data-dir /var/lib/etcd is on no hostPath volume of the pod");
  refused("kind: Pod\nspec:\n  containers:\n  - name: etcd\n    command: [etcd, --data-dir=/d]\n    volumeMounts: "
          "[{name: d, mountPath: /d}]\n  volumes: [{name: d, hostPath: {path: /x}}]\n",
          "no --listen-client-urls");
  // A volume mounted at /var/lib is not /var/lib/etcd2's prefix by name alone.
  const StaticPodEtcd e = parse_static_pod_etcd(
      "kind: Pod\nspec:\n  containers:\n  - name: etcd\n    command: [etcd, --data-dir=/var/lib/etcd2/x, "
      "--listen-client-urls=http://127.0.0.1:2379]\n    volumeMounts: [{name: a, mountPath: /var/lib/etcd}, "
      "{name: b, mountPath: /var/lib/etcd2}]\n  volumes: [{name: a, hostPath: {path: /A}}, {name: b, hostPath: {path: /B}}]\n",
      "m.yaml");
  EXPECT_EQ(e.data_dir, "/B/x");
  try {
    (void)e.connection();
    FAIL() << "plain HTTP has no certificates to give";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("not HTTPS"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace etcdadm

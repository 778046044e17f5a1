// A kubeadm member described in etcdadm's terms (etcdadm/lifecycle/static_pod_member.h): known
// answers for kubeadm v1.37's flags, and each refusal by name. The e2e test Kubeadm.ThreeStacked...
// takes over members kubeadm itself wrote.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/lifecycle/static_pod_member.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

// What `kubeadm join` writes for a second control-plane node (its flags as kubeadm v1.37.2 writes
// them, sorted), certificates and data mounted at their own paths.
std::string kubeadm_pod(const std::string& extra_flag = "") {
  return R"(apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.7.0-0
    command:
    - etcd
    - --advertise-client-urls=https://10.0.0.6:2379
    - --cert-file=/etc/kubernetes/pki/etcd/server.crt
    - --client-cert-auth=true
    - --data-dir=/var/lib/etcd
    - --feature-gates=InitialCorruptCheck=true
    - --initial-advertise-peer-urls=https://10.0.0.6:2380
    - --initial-cluster=cp1=https://10.0.0.5:2380,cp2=https://10.0.0.6:2380
    - --initial-cluster-state=existing
    - --key-file=/etc/kubernetes/pki/etcd/server.key
    - --listen-client-urls=https://127.0.0.1:2379,https://10.0.0.6:2379
    - --listen-metrics-urls=http://127.0.0.1:2381
    - --listen-peer-urls=https://10.0.0.6:2380
    - --name=cp2
    - --peer-cert-file=/etc/kubernetes/pki/etcd/peer.crt
    - --peer-client-cert-auth=true
    - --peer-key-file=/etc/kubernetes/pki/etcd/peer.key
    - --peer-trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt
    - --snapshot-count=10000
    - --trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt
    - --watch-progress-notify-interval=5s
)" + extra_flag +
         R"(    volumeMounts:
    - mountPath: /var/lib/etcd
      name: etcd-data
    - mountPath: /etc/kubernetes/pki/etcd
      name: etcd-certs
  hostNetwork: true
  volumes:
  - hostPath:
      path: /etc/kubernetes/pki/etcd
      type: DirectoryOrCreate
    name: etcd-certs
  - hostPath:
      path: /var/lib/etcd
      type: DirectoryOrCreate
    name: etcd-data
)";
}

MemberConfig base() {
  MemberConfig b;
  b.config_dir = "/etc/etcdadm";
  return b;
}

TEST(StaticPodMember, KubeadmsMemberInEtcdadmsTerms) {
  const StaticPodEtcd pod = parse_static_pod_etcd(kubeadm_pod(), "/etc/kubernetes/manifests/etcd.yaml");
  const MemberConfig m = member_of_static_pod(pod, base());
  EXPECT_EQ(m.name, "cp2");
  EXPECT_EQ(m.data_dir, "/var/lib/etcd");
  EXPECT_EQ(m.certs_dir, "/etc/kubernetes/pki/etcd");
  EXPECT_EQ(m.config_dir, "/etc/etcdadm");
  EXPECT_EQ(m.bind_address, "10.0.0.6");
  EXPECT_EQ(m.client_port, 2379);
  EXPECT_EQ(m.peer_port, 2380);
  EXPECT_EQ(m.init_system, InitSystemKind::kKubelet);
  EXPECT_EQ(m.kubelet_manifest_dir, "/etc/kubernetes/manifests");
  EXPECT_EQ(m.service_name, "etcd");
  EXPECT_EQ(m.pod_name, "etcd") << "kubeadm's pod name kept (its mirror pod etcd-<node>)";
  EXPECT_EQ(m.version, "3.7.0");
  EXPECT_EQ(m.image(), "registry.k8s.io/etcd:3.7.0-0");
  MemberConfig upgraded = m;
  upgraded.version = "3.7.3";
  EXPECT_EQ(upgraded.image(), "registry.k8s.io/etcd:3.7.3-0") << "the next version in kubeadm's tag style";
  // The flags etcdadm has no setting for, passed on; its own (and the corruption check gate, which
  // etcdadm sets by version) not.
  EXPECT_EQ(m.extra_env, (EnvVars{{"ETCD_LISTEN_METRICS_URLS", "http://127.0.0.1:2381"},
                                  {"ETCD_SNAPSHOT_COUNT", "10000"},
                                  {"ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL", "5s"}}));
  const EnvVars env = member_env(m, ClusterBootstrap{"cp1=https://10.0.0.5:2380,cp2=https://10.0.0.6:2380", "t", true});
  EXPECT_EQ(env.back(), (std::pair<std::string, std::string>{"ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL", "5s"}));
  // A version given must be the image's: anything else would change what runs, unplanned.
  MemberConfig given = base();
  given.version = "3.7.0";
  EXPECT_EQ(member_of_static_pod(pod, given).version, "3.7.0");
  given.version = "3.7.3";
  try {
    (void)member_of_static_pod(pod, given);
    ADD_FAILURE() << "taken as another version";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--version 3.7.3, but the manifest runs etcd 3.7.0"), std::string::npos)
        << e.what();
  }
}

// An IPv6 control plane: kubeadm advertises the node's IPv6 address and listens on [::1] beside it
// (its server certificates name both loopbacks). etcdadm then listens and reaches the member on
// [::1] too, and keeps that across its rewrites (state file loopbackAddress).
TEST(StaticPodMember, AnIpv6MemberIsReachedOnTheIpv6Loopback) {
  std::string text = kubeadm_pod();
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"https://127.0.0.1:2379,https://10.0.0.6:2379", "https://[::1]:2379,https://[fd00::6]:2379"},
           {"http://127.0.0.1:2381", "http://[::1]:2381"},
           {"cp1=https://10.0.0.5:2380,cp2=https://10.0.0.6:2380", "cp1=https://[fd00::5]:2380,cp2=https://[fd00::6]:2380"},
           {"--advertise-client-urls=https://10.0.0.6:2379", "--advertise-client-urls=https://[fd00::6]:2379"},
           {"--initial-advertise-peer-urls=https://10.0.0.6:2380", "--initial-advertise-peer-urls=https://[fd00::6]:2380"},
           {"--listen-peer-urls=https://10.0.0.6:2380", "--listen-peer-urls=https://[fd00::6]:2380"}}) {
    ASSERT_NE(text.find(from), std::string::npos) << from;
    text.replace(text.find(from), from.size(), to);
  }
  test::TempDir dir;
  MemberConfig b = base();
  b.config_dir = dir / "etcdadm";
  const MemberConfig m = member_of_static_pod(parse_static_pod_etcd(text, "etcd.yaml"), b);
  EXPECT_EQ(m.bind_address, "fd00::6");
  EXPECT_EQ(m.loopback_address, "::1");
  EXPECT_EQ(m.client_url(), "https://[fd00::6]:2379");
  EXPECT_EQ(m.peer_url(), "https://[fd00::6]:2380");
  EXPECT_EQ(m.loopback_client_url(), "https://[::1]:2379");
  EXPECT_EQ(m.listen_client_urls(), (std::vector<std::string>{"https://[fd00::6]:2379", "https://[::1]:2379"}));
  const auto pki = member_pki_spec(m);
  EXPECT_EQ(pki.client_hosts, (std::vector<std::string>{"fd00::6", "::1"})) << "the server certificate names [::1]";
  save_member_state(m);
  MemberConfig loaded;
  ASSERT_TRUE(load_member_state(b.config_dir, loaded));
  EXPECT_EQ(loaded.loopback_address, "::1");
  EXPECT_EQ(loaded.listen_client_urls(), m.listen_client_urls());
  // An IPv4 member's state file from before loopbackAddress existed reads as 127.0.0.1; any other
  // address is refused, never listened on.
  const MemberConfig v4 = member_of_static_pod(parse_static_pod_etcd(kubeadm_pod(), "etcd.yaml"), b);
  EXPECT_EQ(v4.loopback_address, "127.0.0.1");
  EXPECT_EQ(member_pki_spec(v4).client_hosts, (std::vector<std::string>{"10.0.0.6"}));
  auto state = nlohmann::json::parse(read_file(b.config_dir + "/etcdadm.json"));
  state.erase("loopbackAddress");
  write_file_atomic(b.config_dir + "/etcdadm.json", state.dump(), 0600, /*overwrite=*/true);
  ASSERT_TRUE(load_member_state(b.config_dir, loaded));
  EXPECT_EQ(loaded.loopback_address, "127.0.0.1");
  state["loopbackAddress"] = "10.0.0.9";
  write_file_atomic(b.config_dir + "/etcdadm.json", state.dump(), 0600, /*overwrite=*/true);
  try {
    (void)load_member_state(b.config_dir, loaded);
    ADD_FAILURE() << "a loopback address that is none was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("names loopback address '10.0.0.9', neither 127.0.0.1 nor ::1"),
              std::string::npos)
        << e.what();
  }
}

TEST(StaticPodMember, WhatEtcdadmWouldRunDifferentlyIsRefusedByName) {
  auto refused = [](std::string text, const std::string& expected) {
    try {
      (void)member_of_static_pod(parse_static_pod_etcd(text, "etcd.yaml"), base());
      ADD_FAILURE() << "taken: " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  auto replaced = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  refused(replaced(kubeadm_pod(), "pki/etcd/peer.crt", "pki/etcd/member.crt"),
          "--peer-cert-file is /etc/kubernetes/pki/etcd/member.crt, where etcdadm keeps it at "
          "/etc/kubernetes/pki/etcd/peer.crt");
  refused(replaced(kubeadm_pod(), "--client-cert-auth=true", "--client-cert-auth=false"), "--client-cert-auth is not on");
  refused(replaced(kubeadm_pod(), "--advertise-client-urls=https://10.0.0.6:2379",
                   "--advertise-client-urls=https://etcd.example:2379"),
          "clients are told etcd.example and peers 10.0.0.6");
  refused(replaced(kubeadm_pod(), "https://127.0.0.1:2379,https://10.0.0.6:2379", "https://0.0.0.0:2379"),
          "etcd listens for clients on https://0.0.0.0:2379");
  refused(replaced(kubeadm_pod(), "InitialCorruptCheck=true", "InitialCorruptCheck=true,StopGRPCServiceOnDefrag=true"),
          "--feature-gates sets StopGRPCServiceOnDefrag=true");
  refused(replaced(kubeadm_pod(), "https://10.0.0.6:2380\n", "http://10.0.0.6:2380\n"), "is not https");
  refused(replaced(kubeadm_pod(), "etcd:3.7.0-0", "etcd:latest"), "names no etcd version");
  refused(replaced(kubeadm_pod(), "etcd:3.7.0-0", "etcd@sha256:0123abcd"), "names no etcd version");
  refused(kubeadm_pod("    - --wal-dir=/var/lib/etcd-wal\n"), "etcd runs with --wal-dir, which etcdadm does not");
  refused(kubeadm_pod("    - --force-new-cluster\n"), "--force-new-cluster");
  refused(kubeadm_pod("    - --client-crl-file=/srv/crl.pem\n"),
          "ETCD_CLIENT_CRL_FILE is /srv/crl.pem, a path outside the data and certificates folders");
  refused(replaced(kubeadm_pod(), "      path: /var/lib/etcd\n", "      path: /srv/etcd\n"),
          "--data-dir /var/lib/etcd is the container's path of");
  refused(replaced(kubeadm_pod(), "https://10.0.0.6:2380\n", "https://10.0.0.6:80800\n"), "names no port");
  refused(replaced(kubeadm_pod(), "    volumeMounts:",
                   "    env:\n    - name: ETCD_AUTH_TOKEN\n      valueFrom:\n        secretKeyRef: {name: x, key: y}\n"
                   "    volumeMounts:"),
          "the etcd container takes ETCD_AUTH_TOKEN from elsewhere (valueFrom)");
  // The container's own variables (kubeadm's extraEnvs) go on; one etcdadm sets itself is its own.
  const auto with_env = member_of_static_pod(
      parse_static_pod_etcd(replaced(kubeadm_pod(), "    volumeMounts:",
                                     "    env:\n    - name: GOMAXPROCS\n      value: \"2\"\n"
                                     "    - name: ETCD_NAME\n      value: other\n    volumeMounts:"),
                            "etcd.yaml"),
      base());
  EXPECT_EQ(with_env.extra_env.at(3), (std::pair<std::string, std::string>{"GOMAXPROCS", "2"}));
  const EnvVars rendered = member_env(with_env, ClusterBootstrap{"cp2=https://10.0.0.6:2380", "t", true});
  EXPECT_EQ(std::count_if(rendered.begin(), rendered.end(), [](const auto& kv) { return kv.first == "ETCD_NAME"; }), 1);
  EXPECT_EQ(rendered.front(), (std::pair<std::string, std::string>{"ETCD_NAME", "cp2"}));
  // Inside the folders etcdadm mounts: carried over.
  const auto crl = member_of_static_pod(
      parse_static_pod_etcd(kubeadm_pod("    - --client-crl-file=/etc/kubernetes/pki/etcd/crl.pem\n"), "etcd.yaml"), base());
  EXPECT_NE(std::find(crl.extra_env.begin(), crl.extra_env.end(),
                      std::pair<std::string, std::string>{"ETCD_CLIENT_CRL_FILE", "/etc/kubernetes/pki/etcd/crl.pem"}),
            crl.extra_env.end());
}

// Once taken over, `auto --kubeadm-manifest` runs the recorded member; while the manifest is still
// kubeadm's, it must describe that member: one kubeadm wrote again since (kubeadm upgrade, a new
// version) is refused by name rather than run as the recorded one.
TEST(StaticPodMember, ARecordedMemberIsRunOnlyWhileKubeadmsManifestStillDescribesIt) {
  test::TempDir dir;
  const std::string manifest = dir / "manifests/etcd.yaml";
  make_dirs(dir / "manifests", 0755);
  write_file_atomic(manifest, kubeadm_pod(), 0600);
  MemberConfig b = base();
  b.config_dir = dir / "etcdadm";
  MemberConfig taken = member_of_static_pod(read_static_pod_etcd(manifest), b);
  save_member_state(taken);  // as take_over_static_pod_member leaves it
  EXPECT_EQ(static_pod_member(manifest, b).name, "cp2");
  std::string upgraded = kubeadm_pod();
  upgraded.replace(upgraded.find("etcd:3.7.0-0"), 12, "etcd:3.7.3-0");
  write_file_atomic(manifest, upgraded, 0600, /*overwrite=*/true);
  try {
    (void)static_pod_member(manifest, b);
    ADD_FAILURE() << "a manifest kubeadm wrote again was run as the recorded member";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("runs etcd version 3.7.3, where the member etcdadm took over"),
              std::string::npos)
        << e.what();
  }
  // Parked by a stop, or etcdadm's own by now: the recorded member.
  std::filesystem::remove(manifest);
  EXPECT_EQ(static_pod_member(manifest, b).version, "3.7.0");
}

}  // namespace
}  // namespace etcdadm

// Kubernetes, for real (issue "Kubernetes, for real"): a kube-apiserver of k8s.io/kubernetes
// v1.37.2 runs on loopback over etcdadm's members, with the client certificate etcdadm issued for
// it, while etcdadm works beneath it; kubewatch (test/go-tools/kubewatch) plays its clients (a
// writer, a raw watch, an informer) and says what they saw; kubectl of the same build reads what
// the API serves. Oracles: the API server's own answers (/readyz, its status codes), client-go's
// watch and informer semantics. Newest minor in the default tier, from 3.5 in the full tier
// (test/CMakeLists.txt, E2E_SUITES_WITH_KUBERNETES).
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "common/fs.h"
#include "test/support/auto_fixture.h"
#include "test/support/kube_apiserver.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

class Kubernetes : public AutoFixture {
 protected:
  // An API server over every member, reading the etcd CA it trusts and its client certificate
  // and key (apiserver-etcd-client) from `certs_dir`: a host's certs dir, as etcdadm lays out a
  // stacked control plane, or a copy of its files elsewhere, as kubeadm keeps them.
  std::unique_ptr<KubeApiServer> api_server_reading(const std::string& certs_dir) {
    KubeApiServerOptions o;
    for (const auto& m : hosts_) o.etcd_endpoints.push_back(m.client_url());
    o.etcd_ca_file = certs_dir + "/ca.crt";
    o.etcd_cert_file = certs_dir + "/apiserver-etcd-client.crt";
    o.etcd_key_file = certs_dir + "/apiserver-etcd-client.key";
    return std::make_unique<KubeApiServer>(o);
  }
};

// The cluster CA rotated by the controllers (`etcdadm auto rotate-ca`) under running API servers
// that are never restarted: every host re-issues its leaves by the new CA, then each switches and
// restarts its etcd. Two API servers: one reads m1's certs dir (its apiserver-etcd-client is
// re-issued in place, and its etcd client reads that file again on each new connection), the
// other copies of the same files made before the rotation, as kubeadm keeps them in
// /etc/kubernetes/pki (no host re-issues them). Both load their trust (the old ca.crt) once.
// Both must keep serving without a restart: they verify the members through the cross
// certificate, and the members must accept what they present. Before switched members trusted
// client certificates of the old CA (until it expires), the second lost etcd at the first switch.
TEST_F(Kubernetes, ApiServersServeThroughACaRotationByAutoWithoutARestart) {
  ASSERT_NO_FATAL_FAILURE(bootstrap_three({"--ca-rotate-before", "0"}));
  const std::string copies = dir_ / "kubeadm-pki";
  make_dirs(copies, 0700);
  for (const char* f : {"/ca.crt", "/apiserver-etcd-client.crt", "/apiserver-etcd-client.key"}) {
    write_file_atomic(copies + f, read_file(hosts_[0].certs() + f), 0600);
  }
  auto api = api_server_reading(hosts_[0].certs());
  auto copied = api_server_reading(copies);
  const int api_pid = api->pid(), copied_pid = copied->pid();
  KubeWatch clients(*api, "rotation", 100ms);
  std::this_thread::sleep_for(2s);
  auto started = with_store({"auto", "rotate-ca", "--certs-dir", hosts_[0].certs(), "--reason", "test"});
  ASSERT_EQ(started.exit_code, 0) << started.output;
  ASSERT_TRUE(eventually(240s, [&] { return !auto_status()["caRotation"]["completed"].is_null(); }, "the rotation completed"))
      << logs();
  // Some seconds on the new CA alone, with new connections (each member restarted once).
  std::this_thread::sleep_for(5s);
  const auto ready = api->get("/readyz?verbose");
  const auto copied_ready = copied->get("/readyz?verbose");
  nlohmann::json seen = clients.stop();
  seen.erase("acked");
  std::printf("clients through the rotation: %s\n", seen.dump().c_str());
  EXPECT_TRUE(api->running()) << api->log_tail();
  EXPECT_EQ(api->pid(), api_pid) << "never restarted";
  EXPECT_EQ(ready.first, 200) << ready.second << "\n" << api->log_tail();
  EXPECT_EQ(copied->pid(), copied_pid) << "never restarted";
  EXPECT_EQ(copied_ready.first, 200) << copied_ready.second << "\n" << copied->log_tail();
  auto through_copies = copied->kubectl({"create", "configmap", "through-copies", "-n", "default"});
  EXPECT_EQ(through_copies.exit_code, 0) << through_copies.output << "\n" << copied->log_tail();
  auto listed = api->kubectl({"get", "configmaps", "-n", "rotation", "-o", "name"});
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  const auto& writes = seen["writes"];
  EXPECT_GT(writes["ok"].get<int>(), 50) << seen.dump(2);
  // The last writes went through: the API server writes to etcd on the new CA.
  auto after = api->kubectl({"create", "configmap", "after-rotation", "-n", "rotation"});
  EXPECT_EQ(after.exit_code, 0) << after.output << "\n" << api->log_tail();
  EXPECT_EQ(seen["watch"]["duplicates"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(seen["watch"]["missingAcked"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(seen["informer"]["rvBackwards"].get<int>(), 0) << seen.dump(2);
}

}  // namespace
}  // namespace etcdadm::test

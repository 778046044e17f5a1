// Kubernetes, for real (issue "Kubernetes, for real"): a kube-apiserver of k8s.io/kubernetes
// v1.37.2 runs on loopback over etcdadm's members, with the client certificate etcdadm issued for
// it, while etcdadm works beneath it; kubewatch (test/go-tools/kubewatch) plays its clients (a
// writer, a raw watch, an informer) and says what they saw; kubectl of the same build reads what
// the API serves. Oracles: the API server's own answers (/readyz, its status codes), client-go's
// watch and informer semantics. Newest minor in the default tier, from 3.5 in the full tier
// (test/CMakeLists.txt, E2E_SUITES_WITH_KUBERNETES).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/fs.h"
#include "test/support/auto_fixture.h"
#include "test/support/kube_apiserver.h"
#include "test/support/lifecycle_fixture.h"
#include "test/support/skips.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

// An API server over every host's member, reading the etcd CA it trusts and its client
// certificate and key (apiserver-etcd-client) from `certs_dir`: a host's certs dir, as etcdadm lays
// out a stacked control plane, or a copy of its files elsewhere, as kubeadm keeps them.
template <typename HostList>
std::unique_ptr<KubeApiServer> api_server_over(const HostList& hosts, const std::string& certs_dir) {
  KubeApiServerOptions o;
  for (const auto& m : hosts) o.etcd_endpoints.push_back(m.client_url());
  o.etcd_ca_file = certs_dir + "/ca.crt";
  o.etcd_cert_file = certs_dir + "/apiserver-etcd-client.crt";
  o.etcd_key_file = certs_dir + "/apiserver-etcd-client.key";
  return std::make_unique<KubeApiServer>(o);
}

// The names of the ConfigMaps the API server lists in `ns` (a consistent LIST, as kubectl asks).
std::set<std::string> configmap_names(const KubeApiServer& api, const std::string& ns, int* exit_code = nullptr) {
  auto r = api.kubectl({"get", "configmaps", "-n", ns, "-o", "jsonpath={.items[*].metadata.name}"});
  if (exit_code != nullptr) *exit_code = r.exit_code;
  std::set<std::string> names;
  if (r.exit_code != 0) return names;
  std::istringstream in(r.output);
  for (std::string n; in >> n;) names.insert(n);
  return names;
}

// ConfigMaps <prefix>0 .. <prefix>(count-1) in `ns`, made by one `kubectl apply` of a List.
void create_configmaps(const KubeApiServer& api, const std::string& dir, const std::string& ns,
                       const std::string& prefix, int count) {
  std::string list = "apiVersion: v1\nkind: List\nitems:\n";
  for (int i = 0; i < count; ++i) {
    list += "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: " + prefix + std::to_string(i) +
            "\n    namespace: " + ns + "\n  data:\n    n: \"" + std::to_string(i) + "\"\n";
  }
  const std::string file = dir + "/" + prefix + "list.yaml";
  write_file_atomic(file, list, 0600, /*overwrite=*/true);
  auto r = api.kubectl({"apply", "-f", file});
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

std::set<std::string> numbered(const std::string& prefix, int count) {
  std::set<std::string> out;
  for (int i = 0; i < count; ++i) out.insert(prefix + std::to_string(i));
  return out;
}

class Kubernetes : public AutoFixture {
 protected:
  std::unique_ptr<KubeApiServer> api_server_reading(const std::string& certs_dir) {
    return api_server_over(hosts_, certs_dir);
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

// A member replaced by the controllers under a running API server and its clients: m3's host
// rebuilt on a new disk (controller and etcd stopped, data dir wiped, controller back), so after
// the grace m3's member is removed, its host added again as a learner, joined and promoted. The
// API server's error rate and longest unavailability for writes are measured and bounded, and its
// raw watch and informer, connected throughout, miss and repeat nothing.
TEST_F(Kubernetes, AMemberReplacedByAutoCostsTheApiServerNoWriteAndNoEvent) {
  ASSERT_NO_FATAL_FAILURE(bootstrap_three({"--replace-after", "10s"}));
  auto api = api_server_reading(hosts_[0].certs());
  KubeWatch clients(*api, "replace", 100ms);
  const Host& m3 = hosts_[2];
  ASSERT_TRUE(eventually(30s, [&] {
    const auto records = host_records();
    return std::any_of(records.begin(), records.end(),
                       [&](const HostRecord& r) { return r.name == m3.name && r.data == DataState::kMember; });
  }, "m3's record saying its member started"));
  autos_[m3.name].stop(5000ms);
  stop_pid_file(m3.conf() + "/etcd.pid", bin() + "/etcd", 0ms);
  remove_all(m3.data());
  make_dirs(m3.data(), 0700);
  start_auto(m3);
  std::this_thread::sleep_for(3s);
  ASSERT_TRUE(eventually(90s, [&] { return one_healthy_cluster(3); }, "three healthy voters after the wipe"));
  std::this_thread::sleep_for(3s);
  nlohmann::json seen = clients.stop();
  seen.erase("acked");
  std::printf("clients through the replacement: %s\n", seen.dump().c_str());
  const auto& w = seen["writes"];
  EXPECT_GT(w["ok"].get<int>(), 100) << seen.dump(2);
  EXPECT_EQ(w["failed"].get<int>(), 0) << "a quorum answered throughout: " << seen.dump(2);
  EXPECT_LT(w["longestGapMs"].get<int>(), 3000) << seen.dump(2);
  EXPECT_EQ(seen["watch"]["duplicates"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(seen["watch"]["missingAcked"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(seen["watch"]["relists"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(seen["informer"]["rvBackwards"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(seen["informer"]["lists"].get<int>(), 1) << "no relist: " << seen.dump(2);
  EXPECT_EQ(api->get("/readyz").first, 200) << api->log_tail();
}

// The rolling upgrade a Kubernetes control plane's etcd goes through, 3.5 -> 3.6 -> 3.7 (the
// pinned releases of the minors Kubernetes supports), each step by `etcdadm seed --version` and the
// controllers (one member at a time, followers first, the leader's host last), under a running API
// server and its clients: its error rate and longest unavailability for writes measured and
// bounded, nothing its watch and informer (connected throughout) miss or see twice. The same on
// every minor under test (it names its own releases): registered on the newest only.
TEST_F(Kubernetes, ARollingUpgradeThroughThreeMinorsByAutoCostsTheApiServerAtMostAnElection) {
  if (!pinned_minor_beside(etcd_under_test().minor, 1).empty()) {
    ETCDADM_SKIP_BY_DESIGN() << "the same releases on every minor: run on the newest";
  }
  std::vector<std::string> versions;
  for (const std::string m : {"3.5", "3.6", "3.7"}) {
    const LocalRelease r = make_local_release(dir_ / "releases", etcd_release(m));
    if (versions.empty()) release_ = r;
    versions.push_back(r.version);
  }
  for (auto& h : hosts_) h.own_bin = h.root + "/bin";  // a binary switched is one host's only
  ASSERT_NO_FATAL_FAILURE(bootstrap_three());
  auto api = api_server_reading(hosts_[0].certs());
  KubeWatch clients(*api, "upgrade", 100ms);
  for (size_t i = 1; i < versions.size(); ++i) {
    auto seeded = etcdadm({"seed", "--store", store_, "--version", versions[i], "--certs-dir", hosts_[0].certs()});
    ASSERT_EQ(seeded.exit_code, 0) << seeded.output;
    const bool done = eventually(240s, [&] { return versions_running() == std::set<std::string>{versions[i]}; },
                                 "every member on " + versions[i]);
    if (!done) {
      for (const auto& h : hosts_) {
        const std::string log = read_file(h.conf() + "/etcd.log");
        const size_t at = log.find("panic");
        if (at != std::string::npos) ADD_FAILURE() << h.name << "'s etcd panicked:\n" << log.substr(at > 3000 ? at - 3000 : 0, 5000);
      }
    }
    ASSERT_TRUE(done);
  }
  std::this_thread::sleep_for(2s);
  nlohmann::json seen = clients.stop();
  seen.erase("acked");
  std::printf("clients through %s -> %s -> %s: %s\n", versions[0].c_str(), versions[1].c_str(), versions[2].c_str(),
              seen.dump().c_str());
  const auto& w = seen["writes"];
  EXPECT_GT(w["ok"].get<int>(), 100) << seen.dump(2);
  EXPECT_LE(w["failed"].get<int>(), 5) << "a request caught in a member's restart may fail: " << seen.dump(2);
  EXPECT_LT(w["longestGapMs"].get<int>(), 3000) << "at most an election: " << seen.dump(2);
  EXPECT_EQ(seen["watch"]["duplicates"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(seen["watch"]["missingAcked"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(seen["watch"]["relists"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(seen["informer"]["rvBackwards"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(api->get("/readyz").first, 200) << api->log_tail();
}

class KubernetesCli : public LifecycleFixture {
 protected:
  // A cluster of three under an API server (m1's certs dir), the namespace `ns` holding
  // before-0..19 (all in the backup) and after-0..9 (made after it), and the backup's name.
  std::string cluster_with_a_backup_between(std::unique_ptr<KubeApiServer>& api, const std::string& ns) {
    three_member_cluster();
    api = api_server_over(hosts_, hosts_[0].certs());
    auto made = api->kubectl({"create", "namespace", ns});
    EXPECT_EQ(made.exit_code, 0) << made.output;
    create_configmaps(*api, dir_.path(), ns, "before-", 20);
    const auto conn = connection({&hosts_[0], &hosts_[1], &hosts_[2]});
    auto saved = etcdadm({"backup", "save", "--store", store_, "--endpoints", hosts_[0].client_url(), "--cacert",
                          conn.cacert, "--cert", conn.cert, "--key", conn.key, "-o", "json"});
    EXPECT_EQ(saved.exit_code, 0) << saved.output;
    create_configmaps(*api, dir_.path(), ns, "after-", 10);
    return nlohmann::json::parse(saved.output.substr(saved.output.find('{')))["backup"];
  }

  // Every member lost and the whole cluster restored from `backup` at once, `flags` added.
  void restore_whole_cluster(const std::string& backup, const std::vector<std::string>& flags) {
    ASSERT_NO_FATAL_FAILURE(lose_every_member());
    std::vector<std::string> f = {"--from-backup", backup, "--store", store_, "--initial-cluster",
                                  initial_cluster_of_all(), "--initial-cluster-token", "restored"};
    f.insert(f.end(), flags.begin(), flags.end());
    for (const auto& r : init_together({0, 1, 2}, {f, f, f})) ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  std::string store_ = dir_ / "store";
};

// The whole cluster restored under a running API server, as etcdadm restores by default (the
// revision moved 10^9 on and every older revision marked compacted): the API server is not
// restarted. Once it reconnects, what it lists is exactly the backup's objects (those made after
// the backup are gone), and its clients are told: the raw watch gets 410 Gone and lists again,
// the informer lists again, and no resourceVersion they see goes backwards; a write after the
// restore reaches both.
TEST_F(KubernetesCli, AWholeClusterRestoreMakesEveryClientListAgainAndTheApiServerServesTheBackup) {
  std::unique_ptr<KubeApiServer> api;
  const std::string ns = "restore";
  const std::string backup = cluster_with_a_backup_between(api, ns);
  ASSERT_FALSE(HasFailure());
  KubeWatch clients(*api, ns);
  ASSERT_NO_FATAL_FAILURE(restore_whole_cluster(backup, {}));
  const auto t0 = std::chrono::steady_clock::now();
  std::set<std::string> listed;
  holds_within(60s, [&] {
    return api->get("/readyz").first == 200 && (listed = configmap_names(*api, ns)) == numbered("before-", 20);
  });
  std::printf("the API server lists the backup's objects %.1f s after the restore returned\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_EQ(listed, numbered("before-", 20)) << api->log_tail();
  auto after = api->kubectl({"create", "configmap", "after-restore", "-n", ns});
  EXPECT_EQ(after.exit_code, 0) << after.output;
  // The clients learn it on their own time: the API server's watch cache lists etcd again once its
  // own watch is told "compacted", then ends every client watch.
  const bool told = holds_within(120s, [&] {
    const auto s = clients.status();
    return s.contains("informer") && s["informer"]["lists"].get<int>() >= 2 && s["informer"]["objects"].get<int>() == 21 &&
           s["watch"]["relists"].get<int>() >= 1;
  });
  std::printf("the clients listed again %.1f s after the restore returned\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_TRUE(told) << clients.status().dump(2);
  // And their watches carry what comes next.
  auto next = api->kubectl({"create", "configmap", "after-relist", "-n", ns});
  EXPECT_EQ(next.exit_code, 0) << next.output;
  EXPECT_TRUE(holds_within(30s, [&] {
    const auto s = clients.status();
    return s["informer"]["objects"].get<int>() == 22 && s["watch"]["events"].get<int>() >= 1;
  })) << clients.status().dump(2);
  const nlohmann::json seen = clients.stop();
  std::printf("clients through the restore: %s\n", seen.dump().c_str());
  EXPECT_GE(seen["watch"]["gone"].get<int>(), 1) << seen.dump(2);
  EXPECT_GE(seen["watch"]["relists"].get<int>(), 1) << seen.dump(2);
  EXPECT_EQ(seen["watch"]["backwards"].get<int>(), 0) << seen.dump(2);
  EXPECT_GE(seen["informer"]["lists"].get<int>(), 2) << "the informer listed again: " << seen.dump(2);
  EXPECT_EQ(seen["informer"]["rvBackwards"].get<int>(), 0) << seen.dump(2);
  EXPECT_EQ(seen["informer"]["objects"].get<int>(), 22) << "the backup's 20 and the two made after: " << seen.dump(2);
}

// The same restore with `--keep-revision` (the backup's own revision, lower than what the API
// server last saw), which docs/operations.md warns against for Kubernetes: what breaks, observed.
// Nothing tells the clients: no 410, no relist; the API server's watch cache stays at the old
// revision, so a LIST still shows objects the restore removed while a GET of one says NotFound,
// and the informer never sees a write made after the restore (its resourceVersion is below what
// the cache already served).
TEST_F(KubernetesCli, WithKeepRevisionNothingTellsTheClientsAndTheyServeWhatWasRemoved) {
  std::unique_ptr<KubeApiServer> api;
  const std::string ns = "kept";
  const std::string backup = cluster_with_a_backup_between(api, ns);
  ASSERT_FALSE(HasFailure());
  KubeWatch clients(*api, ns);
  ASSERT_NO_FATAL_FAILURE(restore_whole_cluster(backup, {"--keep-revision"}));
  ASSERT_TRUE(holds_within(60s, [&] { return api->get("/readyz").first == 200; })) << api->log_tail();
  auto created = api->kubectl({"create", "configmap", "after-restore", "-n", ns});
  EXPECT_EQ(created.exit_code, 0) << created.output;
  std::this_thread::sleep_for(3s);
  const std::set<std::string> listed = configmap_names(*api, ns);
  auto got = api->kubectl({"get", "configmap", "after-0", "-n", ns, "-o", "name"});
  const nlohmann::json seen = clients.stop();
  std::string names;
  for (const auto& n : listed) names += n + " ";
  std::printf("after a --keep-revision restore: LIST shows %zu: %s\nGET after-0: exit %d: %s\nclients: %s\n",
              listed.size(), names.c_str(), got.exit_code, got.output.c_str(), seen.dump().c_str());
  EXPECT_EQ(seen["watch"]["gone"].get<int>(), 0) << "no 410: " << seen.dump(2);
  EXPECT_EQ(seen["informer"]["lists"].get<int>(), 1) << "no relist: " << seen.dump(2);
  EXPECT_NE(got.exit_code, 0) << "etcd no longer holds after-0: " << got.output;
  EXPECT_TRUE(listed.count("after-0")) << "the watch cache still lists it: " << names;
  EXPECT_EQ(seen["informer"]["objects"].get<int>(), 30) << "the informer keeps what the restore removed and misses "
                                                            "what was made after it: " << seen.dump(2);
}

// `etcdadm backup restore-keys` of a deleted namespace's objects under a running API server: the
// namespace and its ConfigMaps deleted through the API (the namespace finalized by hand: no
// kube-controller-manager runs here), then both prefixes put back from the backup. The API server
// serves them again, and an informer connected throughout sees each ConfigMap deleted, then added.
TEST_F(KubernetesCli, RestoreKeysBringsADeletedNamespaceBackAndInformersSeeItAdded) {
  three_member_cluster();
  auto api = api_server_over(hosts_, hosts_[0].certs());
  const std::string ns = "gone";
  auto made = api->kubectl({"create", "namespace", ns});
  ASSERT_EQ(made.exit_code, 0) << made.output;
  create_configmaps(*api, dir_.path(), ns, "cm-", 10);
  const auto conn = connection({&hosts_[0], &hosts_[1], &hosts_[2]});
  const std::vector<std::string> tls = {"--endpoints", hosts_[0].client_url(), "--cacert", conn.cacert,
                                        "--cert",      conn.cert,             "--key",    conn.key};
  std::vector<std::string> save = {"backup", "save", "--store", store_};
  save.insert(save.end(), tls.begin(), tls.end());
  auto saved = etcdadm(save);
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  KubeWatch clients(*api, ns);
  auto deleted = api->kubectl({"delete", "configmaps", "--all", "-n", ns});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  auto terminating = api->kubectl({"delete", "namespace", ns, "--wait=false"});
  ASSERT_EQ(terminating.exit_code, 0) << terminating.output;
  auto spec = api->kubectl({"get", "namespace", ns, "-o", "json"});
  ASSERT_EQ(spec.exit_code, 0) << spec.output;
  auto object = nlohmann::json::parse(spec.output);
  object["spec"]["finalizers"] = nlohmann::json::array();
  write_file_atomic(dir_ / "finalize.json", object.dump(), 0600);
  auto finalized = api->kubectl({"replace", "--raw", "/api/v1/namespaces/" + ns + "/finalize", "-f", dir_ / "finalize.json"});
  ASSERT_EQ(finalized.exit_code, 0) << finalized.output;
  ASSERT_TRUE(holds_within(30s, [&] { return api->kubectl({"get", "namespace", ns}).exit_code != 0; }))
      << "the namespace is gone";

  for (const std::string prefix : {"/registry/namespaces/" + ns, "/registry/configmaps/" + ns + "/"}) {
    std::vector<std::string> args = {"backup", "restore-keys", "latest", prefix, "--prefix", "--store", store_};
    args.insert(args.end(), tls.begin(), tls.end());
    auto r = etcdadm(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  std::set<std::string> listed;
  ASSERT_TRUE(holds_within(30s, [&] { return (listed = configmap_names(*api, ns)) == numbered("cm-", 10); }))
      << "the API server lists them again";
  std::this_thread::sleep_for(2s);
  const nlohmann::json seen = clients.stop();
  std::printf("clients through restore-keys: %s\n", seen.dump().c_str());
  EXPECT_EQ(seen["informer"]["deletes"].get<int>(), 10) << seen.dump(2);
  EXPECT_EQ(seen["informer"]["adds"].get<int>(), 20) << "10 at its start, 10 put back: " << seen.dump(2);
  EXPECT_EQ(seen["informer"]["objects"].get<int>(), 10) << seen.dump(2);
  EXPECT_EQ(seen["informer"]["lists"].get<int>(), 1) << "no relist: the events came as events: " << seen.dump(2);
}

// The static-pod manifests docs/deploy/kubernetes ships, checked by the API server itself
// (`kubectl apply --dry-run=server`: decoding, defaulting, validation and admission, nothing
// stored): every one is a Pod the API server would take as it is.
TEST_F(KubernetesCli, TheDeployManifestsPassTheApiServersOwnChecks) {
  ASSERT_NO_FATAL_FAILURE(init(hosts_[0]));
  auto api = api_server_over(std::vector<Host>{hosts_[0]}, hosts_[0].certs());
  // The namespace's default ServiceAccount, which kube-controller-manager (not run here) makes and
  // the ServiceAccount admission looks up for any Pod (a kubelet's mirror pod is exempt).
  auto account = api->kubectl({"create", "serviceaccount", "default", "-n", "kube-system"});
  ASSERT_EQ(account.exit_code, 0) << account.output;
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(ETCDADM_SOURCE_DIR) + "/docs/deploy/kubernetes")) {
    if (e.path().extension() != ".yaml") continue;
    auto r = api->kubectl({"apply", "--dry-run=server", "-f", e.path().string()});
    EXPECT_EQ(r.exit_code, 0) << e.path() << ": " << r.output;
    EXPECT_NE(r.output.find("(server dry run)"), std::string::npos) << r.output;
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

}  // namespace
}  // namespace etcdadm::test

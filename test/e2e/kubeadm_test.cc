// kubeadm's stacked etcd as kubeadm itself writes it: its certificates (`kubeadm init phase certs
// etcd-ca|etcd-server|etcd-peer|etcd-healthcheck-client|apiserver-etcd-client`) and its static pod
// manifest (`kubeadm init phase etcd local`), kubeadm v1.37.2 built from the k8s.io/kubernetes
// module (scripts/go-test-tools.sh). The manifest's command runs under a small kubelet of the
// test's own (test/support/mini_kubelet.h) in a network namespace of its own, on kubeadm's ports.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "common/file_users.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "test/support/lifecycle_fixture.h"
#include "test/support/mini_kubelet.h"
#include "test/support/netns_lab.h"
#include "test/support/object_servers.h"
#include "test/support/skips.h"
#include "test/support/writer.h"
#include "etcd/client.h"
#include "restore/static_pod_restore.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

class Kubeadm : public LifecycleFixture {
 protected:
  void SetUp() override {
    LifecycleFixture::SetUp();
    if (const std::string why = NetnsLab::unavailable(); !why.empty()) ETCDADM_SKIP_OUTSIDE_CI() << why;
  }
  void TearDown() override {
    kubelet_.reset();  // etcd stopped before its namespace and its files go
    lab_.reset();
    LifecycleFixture::TearDown();
  }

  // One control-plane node, cp1, in a network namespace of its own: kubeadm's files under
  // dir_/cp1 (stacked_etcd), its etcd run by the small kubelet. The caller checks IsSkipped().
  void start_node() {
    if (etcd_under_test().minor_number() < 6) {
      ETCDADM_SKIP_BY_DESIGN() << "kubeadm v1.37.2's manifest passes --feature-gates, a 3.6+ flag";
    }
    lab_ = std::make_unique<NetnsLab>(1);
    root_ = dir_ / "cp1";
    manifest_ = stacked_etcd(root_, "cp1", lab_->address(0));
    ASSERT_FALSE(HasFailure());
    kubelet_ = std::make_unique<MiniKubelet>(manifest_, etcd_under_test().bin_dir, lab_->netns(0), log_path());
  }

  // kubeadm's files for control-plane node `name` at `address`, under `root` as if it were /:
  // certificatesDir root/etc/kubernetes/pki, etcd's dataDir root/var/lib/etcd, the manifest
  // root/etc/kubernetes/manifests/etcd.yaml (returned). kubeadm writes manifests only into
  // /etc/kubernetes: it runs in a mount namespace of its own over an empty one, and the file is
  // copied out.
  // `extra_args`: etcd.local.extraArgs (kubeadm's own flags overridden by name).
  std::string stacked_etcd(const std::string& root, const std::string& name, const std::string& address,
                           const std::map<std::string, std::string>& extra_args = {}) {
    const std::string config = root + "/kubeadm.yaml";
    make_dirs(root, 0755);
    std::string extra;
    for (const auto& [flag, value] : extra_args) extra += "    - name: " + flag + "\n      value: " + value + "\n";
    write_file_atomic(config,
                      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n"
                      "  advertiseAddress: " + address + "\nnodeRegistration:\n  name: " + name + "\n---\n"
                      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.37.2\n"
                      "certificatesDir: " + root + "/etc/kubernetes/pki\netcd:\n  local:\n    dataDir: " + root +
                          "/var/lib/etcd\n    imageTag: " + etcd_under_test().version + "-0\n" +
                          (extra.empty() ? "" : "    extraArgs:\n" + extra),
                      0600);
    auto written = run_process(
        {"unshare", "--mount", "--propagation", "private", "sh", "-c",
         "mkdir -p /etc/kubernetes && mount -t tmpfs kubeadm /etc/kubernetes && "
         "for cert in etcd-ca etcd-server etcd-peer etcd-healthcheck-client apiserver-etcd-client; do "
         "\"$1\" init phase certs $cert --config \"$2\" || exit 1; done && "
         "\"$1\" init phase etcd local --config \"$2\" && mkdir -p \"$3\" && cp /etc/kubernetes/manifests/etcd.yaml \"$3\"/",
         "sh", go_test_tool("kubernetes", "kubeadm"), config, root + "/etc/kubernetes/manifests"});
    EXPECT_EQ(written.exit_code, 0) << written.output;
    return root + "/etc/kubernetes/manifests/etcd.yaml";
  }

  // etcdadm `args` inside host `i`'s network namespace (a kubeadm node's own view: 127.0.0.1:2379).
  ProcessResult on_node(const NetnsLab& lab, int i, std::vector<std::string> args) {
    args.insert(args.begin(), {"ip", "netns", "exec", lab.netns(i), ETCDADM_BIN});
    RunOptions ro = catalog_env(std::to_string(i));
    ro.timeout = 120s;
    return run_process(args, ro);
  }
  // `backup save` with the manifest alone, once kubeadm's etcd serves.
  void first_backup(const std::string& store) {
    ProcessResult saved;
    ASSERT_TRUE(holds_within(60s, [&] {
      saved = on_node(*lab_, 0, {"backup", "save", "--store", store, "--kubeadm-manifest", manifest_});
      return saved.exit_code == 0;
    })) << "a backup of kubeadm's etcd: " << saved.output << "\n"
        << kubelet_->last_error() << tail_of(log_path());
  }
  RunOptions catalog_env(const std::string& whose) {
    RunOptions ro;
    ro.env["ETCDADM_CATALOG"] = dir_ / ("catalog-" + whose + ".db");
    return ro;
  }

  std::unique_ptr<NetnsLab> lab_;
  std::string root_, manifest_;
  std::string log_path() const { return dir_ / "etcd-cp1.log"; }
  std::unique_ptr<MiniKubelet> kubelet_;
};

// A backup save, a list and the sidecar given kubeadm's manifest alone: the member's loopback
// client URL, the etcd CA and kubeadm's health-check client pair beside it come from the manifest,
// never from a flag. A manifest that is not etcd's, or a node without the pair, is refused by name.
TEST_F(Kubeadm, BackupsAndTheSidecarTakeTheEndpointAndCertificatesFromKubeadmsManifest) {
  ASSERT_NO_FATAL_FAILURE(start_node());
  if (IsSkipped()) return;
  const std::string store = dir_ / "store";
  ASSERT_NO_FATAL_FAILURE(first_backup(store));

  // The sidecar, with the same flag, takes one on POST /backup.
  const std::string listen = "127.0.0.1:9791";  // the node's own loopback: no token needed
  auto sidecar = ChildProcess::start({"ip", "netns", "exec", lab_->netns(0), ETCDADM_BIN, "backup", "sidecar", "--store",
                                      store, "--kubeadm-manifest", manifest_, "--schedule", "@yearly", "--listen", listen},
                                     dir_ / "sidecar.log", catalog_env("sidecar"));
  ProcessResult posted;
  ASSERT_TRUE(holds_within(30s, [&] {
    posted = run_process({"ip", "netns", "exec", lab_->netns(0), "curl", "-sf", "-X", "POST", "http://" + listen + "/backup"});
    return posted.exit_code == 0;
  })) << "the sidecar's POST /backup: " << posted.output << tail_of(dir_ / "sidecar.log");
  ProcessResult listed;
  EXPECT_TRUE(holds_within(30s, [&] {  // 202: queued
    listed = etcdadm({"backup", "list", "--store", store, "-o", "json"});
    return listed.exit_code == 0 && nlohmann::json::parse(listed.output.substr(listed.output.find('['))).size() == 2;
  })) << "the sidecar's backup listed beside the first: " << listed.output << tail_of(dir_ / "sidecar.log");
  sidecar.stop();
  EXPECT_EQ(kubelet_->starts(), 1) << "etcd ran once, as kubeadm configured it";

  // Refused by name: a manifest_ that runs no etcd, and a node whose health-check pair is gone.
  const std::string other = dir_ / "other.yaml";
  write_file_atomic(other, "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: x\n    command: [sleep]\n", 0600);
  auto refused = on_node(*lab_, 0, {"backup", "save", "--store", store, "--kubeadm-manifest", other});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find(other + ": no container runs etcd"), std::string::npos) << refused.output;
  std::filesystem::remove(root_ + "/etc/kubernetes/pki/etcd/healthcheck-client.key");
  refused = on_node(*lab_, 0, {"backup", "save", "--store", store, "--kubeadm-manifest", manifest_});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("healthcheck-client.key does not exist on this host"), std::string::npos)
      << refused.output;
}

// kubeadm's restore runbook as one command: `backup restore latest --kubeadm-manifest`, killed
// once right after it moved the manifest_ away (the kubelet stops etcd) and run again: it carries on
// from the parked manifest_, sets the old data aside, restores the backup as the manifest_'s member
// (a Kubernetes keyspace: the revision moved forward, older ones compacted), and the kubelet starts
// etcd on it once the manifest_ is back. The write after the backup is gone, the one before it there.
TEST_F(Kubeadm, ItsRestoreRunbookIsOneCommandThatAKillMidwayDoesNotBreak) {
  ASSERT_NO_FATAL_FAILURE(start_node());
  if (IsSkipped()) return;
  const std::string pki = root_ + "/etc/kubernetes/pki/etcd";
  ConnectionConfig from_outside;  // the node's address, from the test's own namespace
  from_outside.endpoints = {"https://" + lab_->address(0) + ":2379"};
  from_outside.cacert = pki + "/ca.crt";
  from_outside.cert = pki + "/healthcheck-client.crt";
  from_outside.key = pki + "/healthcheck-client.key";
  auto value_of = [&](const std::string& key) -> std::optional<std::string> {
    EtcdClient client(from_outside);
    etcdserverpb::RangeRequest get;
    get.set_key(key);
    const auto r = client.range(get);
    if (r.kvs_size() == 0) return std::nullopt;
    return r.kvs(0).value();
  };
  ASSERT_TRUE(holds_within(60s, [&] {
    try {
      EtcdClient(from_outside).put("/registry/configmaps/default/before", "1");
      return true;
    } catch (const Error&) {
      return false;
    }
  })) << "kubeadm's etcd serving: " << kubelet_->last_error() << tail_of(log_path());
  const std::string store = dir_ / "store";
  auto saved = on_node(*lab_, 0, {"backup", "save", "--store", store, "--kubeadm-manifest", manifest_});
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  EtcdClient(from_outside).put("/registry/configmaps/default/after", "2");

  std::vector<std::string> restore = {"backup", "restore", "latest", "--store", store, "--kubeadm-manifest", manifest_};
  auto killed = run_process([&] {
    std::vector<std::string> argv = {"ip", "netns", "exec", lab_->netns(0), ETCDADM_BIN};
    argv.insert(argv.end(), restore.begin(), restore.end());
    return argv;
  }(), [&] {
    RunOptions ro = catalog_env("0");
    ro.env["ETCDADM_FAILPOINTS"] = "kubeadm-restore/parked=kill";
    return ro;
  }());
  EXPECT_NE(killed.exit_code, 0) << killed.output;
  EXPECT_FALSE(path_exists(manifest_)) << "killed with the manifest_ parked";
  restore.insert(restore.end(), {"-o", "json"});
  auto restored = on_node(*lab_, 0, restore);
  ASSERT_EQ(restored.exit_code, 0) << restored.output << tail_of(log_path());
  const auto answer = nlohmann::json::parse(restored.output.substr(restored.output.find('{')));
  EXPECT_TRUE(answer["resumed"].get<bool>()) << restored.output;
  EXPECT_TRUE(answer["serving"].get<bool>()) << restored.output;
  EXPECT_TRUE(answer["hasLeader"].get<bool>()) << restored.output;
  EXPECT_GT(answer["revision"].get<int64_t>(), 1000000000) << "a Kubernetes keyspace comes back bumped";
  ASSERT_TRUE(answer["setAside"].is_string()) << restored.output;
  EXPECT_TRUE(path_exists(answer["setAside"].get<std::string>() + "/member/snap/db")) << "the old data kept";
  EXPECT_TRUE(path_exists(manifest_));
  EXPECT_FALSE(path_exists(parked_manifest_path(manifest_)));
  EXPECT_EQ(value_of("/registry/configmaps/default/before"), "1");
  EXPECT_EQ(value_of("/registry/configmaps/default/after"), std::nullopt) << "written after the backup";
  EXPECT_EQ(kubelet_->starts(), 2) << "stopped once for the restore, started once on it";
}

// A kubelet that does not stop etcd (here: none runs, and another process holds the member's db
// open): the restore waits --stop-timeout, puts the manifest back and changes nothing.
TEST_F(Kubeadm, ARestoreWhoseEtcdDoesNotStopPutsTheManifestBackAndChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(start_node());
  if (IsSkipped()) return;
  const std::string store = dir_ / "store";
  ASSERT_NO_FATAL_FAILURE(first_backup(store));
  kubelet_.reset();  // etcd stopped with it: a kubelet that is gone
  const std::string db = root_ + "/var/lib/etcd/member/snap/db";
  const std::string before = read_file(db);
  auto holder = ChildProcess::start({"sh", "-c", "exec 3<\"$0\"; exec sleep 60", db}, dir_ / "holder.log");
  ASSERT_TRUE(holds_within(5s, [&] { return !processes_holding(root_ + "/var/lib/etcd").empty(); })) << "the db held open";
  auto refused = on_node(*lab_, 0, {"backup", "restore", "latest", "--store", store, "--kubeadm-manifest", manifest_,
                                    "--stop-timeout", "2s"});
  holder.stop();
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("etcd did not stop within 2 s of its manifest leaving"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("the manifest is back, nothing was changed"), std::string::npos) << refused.output;
  EXPECT_TRUE(path_exists(manifest_));
  EXPECT_FALSE(path_exists(parked_manifest_path(manifest_)));
  EXPECT_EQ(read_file(db), before) << "the member's data untouched";
  for (const auto& e : std::filesystem::directory_iterator(root_ + "/var/lib")) {
    EXPECT_EQ(e.path().filename().string().find("set-aside"), std::string::npos) << e.path();
  }
}

// Three stacked control-plane members grown as kubeadm grows them, kubeadm writing every file: the
// first node's certificates and manifest (`kubeadm init phase certs ...`, `init phase etcd local`);
// each further node gets the cluster's etcd CA (what `kubeadm join --control-plane` copies), its own
// certificates from kubeadm, is added as a learner through a member and promoted once it has caught
// up (kubeadm join's etcd phase does both through its etcd client), its manifest from kubeadm with
// the initial cluster and state join passes (`init phase etcd local` with them as extraArgs: `kubeadm
// join` itself needs a running API server and kubelet). Then `etcdadm auto --kubeadm-manifest` on
// every node takes the member over (etcdadm's files beside kubeadm's, the manifest untouched) and
// `etcdadm auto adopt` hands the cluster to the controllers: no etcd restarted, no write failed.
TEST_F(Kubeadm, ThreeStackedMembersAreTakenOverByAutoUnderTheKubeletAndAdoptedInPlace) {
  if (etcd_under_test().minor_number() < 6) {
    ETCDADM_SKIP_BY_DESIGN() << "kubeadm v1.37.2's manifest passes --feature-gates, a 3.6+ flag";
    return;
  }
  constexpr int kNodes = 3;
  lab_ = std::make_unique<NetnsLab>(kNodes);
  std::vector<std::string> roots, manifests, names, as_kubeadm_wrote;
  std::vector<std::unique_ptr<MiniKubelet>> kubelets;
  for (int i = 0; i < kNodes; ++i) {
    names.push_back("cp" + std::to_string(i + 1));
    roots.push_back(dir_ / names.back());
  }
  auto pki = [&](int i) { return roots[i] + "/etc/kubernetes/pki/etcd"; };
  auto peer_url = [&](int i) { return "https://" + lab_->address(i) + ":2380"; };
  auto log_of = [&](int i) -> std::string { return dir_ / ("etcd-" + names[i] + ".log"); };
  ConnectionConfig cluster;  // from the test's own namespace, with kubeadm's health-check pair
  cluster.cacert = pki(0) + "/ca.crt";
  cluster.cert = pki(0) + "/healthcheck-client.crt";
  cluster.key = pki(0) + "/healthcheck-client.key";
  cluster.endpoints.clear();  // each node's as it is made

  std::string initial_cluster;
  for (int i = 0; i < kNodes; ++i) {
    initial_cluster += (i == 0 ? "" : ",") + names[i] + "=" + peer_url(i);
    std::map<std::string, std::string> join_args;
    uint64_t learner = 0;
    if (i > 0) {
      make_dirs(pki(i), 0755);
      for (const char* f : {"ca.crt", "ca.key"}) std::filesystem::copy_file(pki(0) + "/" + f, pki(i) + "/" + f);
      // Refused ("unhealthy cluster") until the member promoted last has been connected a while:
      // kubeadm retries it too.
      ASSERT_TRUE(holds_within(60s, [&] {
        try {
          learner = EtcdClient(cluster).member_add({peer_url(i)}, /*learner=*/true).member().id();
          return true;
        } catch (const Error&) {
          return false;
        }
      })) << names[i] << " added as a learner";
      join_args = {{"initial-cluster", initial_cluster}, {"initial-cluster-state", "existing"}};
    }
    manifests.push_back(stacked_etcd(roots[i], names[i], lab_->address(i), join_args));
    ASSERT_FALSE(HasFailure());
    as_kubeadm_wrote.push_back(read_file(manifests.back()));
    kubelets.push_back(std::make_unique<MiniKubelet>(manifests[i], etcd_under_test().bin_dir, lab_->netns(i), log_of(i)));
    cluster.endpoints.push_back("https://" + lab_->address(i) + ":2379");
    if (i == 0) {
      std::string why;
      ASSERT_TRUE(holds_within(60s, [&] {
        try {
          return EtcdClient(cluster).status(cluster.endpoints[0]).leader() != 0;
        } catch (const Error& e) {
          why = e.what();
          return false;
        }
      })) << "cp1 serving: " << why << kubelets[0]->last_error() << tail_of(log_of(0));
    } else {
      ASSERT_TRUE(holds_within(60s, [&] {
        try {
          EtcdClient(cluster).member_promote(learner);
          return true;
        } catch (const Error&) {
          return false;  // not caught up yet
        }
      })) << names[i] << " promoted: " << kubelets[i]->last_error() << tail_of(log_of(i));
    }
  }
  ASSERT_EQ(EtcdClient(cluster).member_list().members_size(), kNodes);
  Writer writer(cluster);

  // etcdadm auto on every node, told only where kubeadm's manifest is (and the store).
  const std::string store = dir_ / "store";
  std::vector<ChildProcess> autos;
  struct StopAll {
    std::vector<ChildProcess>& processes;
    ~StopAll() {
      for (auto& p : processes) p.stop(5000ms);
    }
  } stop_autos{autos};
  for (int i = 0; i < kNodes; ++i) {
    RunOptions ro = catalog_env(names[i]);
    autos.push_back(ChildProcess::start(
        {"ip", "netns", "exec", lab_->netns(i), ETCDADM_BIN, "auto", "--store", store, "--no-backups", "--interval", "1s",
         "--idle-interval", "3s", "--heartbeat", "5s", "--kubeadm-manifest", manifests[i], "--config-dir",
         roots[i] + "/etc/etcdadm", "--install-dir", roots[i] + "/opt/bin", "--binaries-dir", etcd_under_test().bin_dir},
        dir_ / ("auto-" + names[i] + ".log"), ro));
  }
  auto logs = [&] {
    std::string out;
    for (int i = 0; i < kNodes; ++i) out += tail_of(dir_ / ("auto-" + names[i] + ".log"));
    return out;
  };
  auto status = [&] {
    auto r = etcdadm({"auto", "status", "--store", store, "-o", "json"});
    return r.exit_code == 0 ? nlohmann::json::parse(r.output.substr(r.output.find('{'))) : nlohmann::json::object();
  };
  ASSERT_TRUE(holds_within(60s, [&] {
    const auto hosts = status().value("hosts", nlohmann::json::array());
    return hosts.size() == kNodes && std::all_of(hosts.begin(), hosts.end(), [](const auto& h) {
             return h["data"] == "member" && h["etcdRunning"].template get<bool>();
           });
  })) << "every node's member registered: " << status().dump(2) << logs();
  for (int i = 0; i < kNodes; ++i) {
    // etcdadm's files for the member, beside kubeadm's; kubeadm's manifest as kubeadm wrote it.
    EXPECT_TRUE(path_exists(roots[i] + "/etc/etcdadm/etcdadm.json")) << names[i];
    EXPECT_TRUE(path_exists(pki(i) + "/etcdctl-etcd-client.crt")) << names[i];
    const std::string env = read_file(roots[i] + "/etc/etcdadm/etcd.env");
    EXPECT_NE(env.find("ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL=5s"), std::string::npos) << env;
    EXPECT_NE(env.find("ETCD_LISTEN_METRICS_URLS=http://127.0.0.1:2381"), std::string::npos) << env;
    EXPECT_EQ(read_file(manifests[i]), as_kubeadm_wrote[i]) << "kubeadm's manifest changed";
  }

  auto adopted = etcdadm({"auto", "adopt", "--store", store, "--certs-dir", pki(0)});
  ASSERT_EQ(adopted.exit_code, 0) << adopted.output << logs();
  EXPECT_NE(adopted.output.find("3 members"), std::string::npos) << adopted.output;
  ASSERT_TRUE(holds_within(60s, [&] {
    const auto hosts = status().value("hosts", nlohmann::json::array());
    return hosts.size() == kNodes && std::all_of(hosts.begin(), hosts.end(), [](const auto& h) {
             const std::string w = h.value("waitingFor", "");
             return w.find("healthy voters, as the spec asks") != std::string::npos ||
                    w.find("the leader's controller acts") != std::string::npos;
           });
  })) << "the controllers running the adopted cluster: " << status().dump(2) << logs();
  std::cout << "writes while taken over and adopted: " << writer.writes() << ", longest gap "
            << writer.longest_outage().count() << " ms\n";
  EXPECT_EQ(writer.last_error(), "") << "a write failed";
  EXPECT_LT(writer.longest_outage(), 1000ms);
  for (int i = 0; i < kNodes; ++i) EXPECT_EQ(kubelets[i]->starts(), 1) << names[i] << "'s etcd was restarted";

  // Then the controllers own the manifests: a CA rotation switches each node in turn, rewriting
  // its manifest as etcdadm's and restarting etcd through the kubelet, never two at once.
  const int writes_before = writer.writes();
  auto rotation = etcdadm({"auto", "rotate-ca", "--store", store, "--certs-dir", pki(0), "--reason", "test"});
  ASSERT_EQ(rotation.exit_code, 0) << rotation.output;
  ASSERT_TRUE(holds_within(240s, [&] { return !status()["caRotation"]["completed"].is_null(); }))
      << "the rotation completed: " << status().dump(2) << logs();
  writer.stop();
  std::cout << "writes through the CA rotation: " << writer.writes() - writes_before << ", longest gap "
            << writer.longest_outage().count() << " ms, last error: " << writer.last_error() << "\n";
  EXPECT_LT(writer.longest_outage(), 3000ms) << "one member restarted at a time";
  for (int i = 0; i < kNodes; ++i) {
    const std::string now = read_file(manifests[i]);
    EXPECT_NE(now.find("etcdadm.io/config-dir: \"" + roots[i] + "/etc/etcdadm\""), std::string::npos)
        << names[i] << "'s manifest is etcdadm's now:\n" << now;
    EXPECT_NE(now.find("registry.k8s.io/etcd:" + etcd_under_test().version + "-0"), std::string::npos)
        << "kubeadm's image kept:\n" << now;
    EXPECT_NE(now.find("ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL"), std::string::npos) << "kubeadm's flags kept:\n" << now;
    EXPECT_GT(kubelets[i]->starts(), 1) << names[i] << " restarted on the new CA";
    std::cout << names[i] << "'s etcd started by its kubelet " << kubelets[i]->starts() << " times\n";
    EXPECT_FALSE(path_exists(roots[i] + "/etc/kubernetes/etcd.yaml.etcdadm-stopped")) << names[i];
  }
  auto members = EtcdClient(cluster).member_list();
  EXPECT_EQ(members.members_size(), kNodes) << "the same members, on the new CA";
}

}  // namespace
}  // namespace etcdadm::test

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
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/member_config.h"
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
    for (auto& a : autos_) a.stop(5000ms);
    kubelets_.clear();
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
    for (const auto& [flag, value] : extra_args) extra += "    - name: " + flag + "\n      value: \"" + value + "\"\n";
    write_file_atomic(config,
                      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n"
                      "  advertiseAddress: \"" + address + "\"\nnodeRegistration:\n  name: " + name + "\n---\n"
                      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.37.2\n"
                      "certificatesDir: " + root + "/etc/kubernetes/pki\netcd:\n  local:\n    dataDir: " + root +
                          "/var/lib/etcd\n    imageTag: " + (image_version_.empty() ? etcd_under_test().version : image_version_) + "-0\n" +
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

  // Control-plane nodes cp1..cpN (kubeadm's files under dir_/cpI, etcd `release` by image tag, run
  // by a small kubelet each), grown as kubeadm grows a stacked control plane: the first node's
  // certificates and manifest (`kubeadm init phase certs ...`, `init phase etcd local`); each
  // further node gets the cluster's etcd CA (what `kubeadm join --control-plane` copies), its own
  // certificates from kubeadm, is added as a learner through a member and promoted once it has
  // caught up (kubeadm join's etcd phase does both through its etcd client), its manifest from
  // kubeadm with the initial cluster and state join passes (`init phase etcd local` with them as
  // extraArgs: `kubeadm join` itself needs a running API server and kubelet). `stacked_` then
  // reaches the cluster from the test's namespace with kubeadm's health-check pair. `ipv6`: the
  // nodes advertise IPv6 addresses (an IPv6 control plane: kubeadm then listens on [::1]).
  void grow_stacked_control_plane(int nodes, const EtcdRelease& release, bool ipv6 = false) {
    image_version_ = release.version;
    lab_ = std::make_unique<NetnsLab>(nodes, ipv6);
    auto address = [&](int i) { return ipv6 ? lab_->address6(i) : lab_->address(i); };
    for (int i = 0; i < nodes; ++i) {
      names_.push_back("cp" + std::to_string(i + 1));
      roots_.push_back(dir_ / names_.back());
    }
    stacked_.cacert = pki(0) + "/ca.crt";
    stacked_.cert = pki(0) + "/healthcheck-client.crt";
    stacked_.key = pki(0) + "/healthcheck-client.key";
    stacked_.endpoints.clear();  // each node's as it is made
    std::map<std::string, std::string> bin_dirs;
    for (const auto& minor : pinned_etcd_minors()) {
      if (etcd_release_available(minor)) bin_dirs[etcd_release(minor).version] = etcd_release(minor).bin_dir;
    }
    std::string initial_cluster;
    for (int i = 0; i < nodes; ++i) {
      const std::string peer_url = "https://" + url_host(address(i)) + ":2380";
      initial_cluster += (i == 0 ? "" : ",") + names_[i] + "=" + peer_url;
      std::map<std::string, std::string> join_args;
      uint64_t learner = 0;
      if (i > 0) {
        make_dirs(pki(i), 0755);
        for (const char* f : {"ca.crt", "ca.key"}) std::filesystem::copy_file(pki(0) + "/" + f, pki(i) + "/" + f);
        // Refused ("unhealthy cluster") until the member promoted last has been connected a
        // while: kubeadm retries it too.
        ASSERT_TRUE(holds_within(60s, [&] {
          try {
            learner = EtcdClient(stacked_).member_add({peer_url}, /*learner=*/true).member().id();
            return true;
          } catch (const Error&) {
            return false;
          }
        })) << names_[i] << " added as a learner";
        join_args = {{"initial-cluster", initial_cluster}, {"initial-cluster-state", "existing"}};
      }
      manifests_.push_back(stacked_etcd(roots_[i], names_[i], address(i), join_args));
      ASSERT_FALSE(HasFailure());
      as_kubeadm_wrote_.push_back(read_file(manifests_.back()));
      kubelets_.push_back(
          std::make_unique<MiniKubelet>(manifests_[i], release.bin_dir, lab_->netns(i), etcd_log(i), bin_dirs));
      stacked_.endpoints.push_back("https://" + url_host(address(i)) + ":2379");
      std::string why;
      ASSERT_TRUE(holds_within(60s, [&] {
        try {
          if (i == 0) return EtcdClient(stacked_).status(stacked_.endpoints[0]).leader() != 0;
          EtcdClient(stacked_).member_promote(learner);
          return true;
        } catch (const Error& e) {
          why = e.what();  // not serving, or not caught up yet
          return false;
        }
      })) << names_[i] << " serving as a voter: " << why << kubelets_[i]->last_error() << tail_of(etcd_log(i));
    }
    ASSERT_EQ(EtcdClient(stacked_).member_list().members_size(), nodes);
  }
  std::string pki(int i) const { return roots_[i] + "/etc/kubernetes/pki/etcd"; }
  std::string etcd_log(int i) const { return dir_ / ("etcd-" + names_[i] + ".log"); }

  // `etcdadm auto` on every node, told only where kubeadm's manifest is (and the store).
  void start_autos(const std::string& store) {
    for (size_t i = 0; i < names_.size(); ++i) {
      autos_.push_back(ChildProcess::start(
          {"ip", "netns", "exec", lab_->netns(static_cast<int>(i)), ETCDADM_BIN, "auto", "--store", store,
           "--no-backups", "--interval", "1s", "--idle-interval", "3s", "--heartbeat", "5s", "--kubeadm-manifest",
           manifests_[i], "--config-dir", roots_[i] + "/etc/etcdadm", "--install-dir", roots_[i] + "/opt/bin",
           "--binaries-dir", etcd_under_test().bin_dir},
          dir_ / ("auto-" + names_[i] + ".log"), catalog_env(names_[i])));
    }
  }
  std::string auto_logs() const {
    std::string out;
    for (const auto& n : names_) out += tail_of(dir_ / ("auto-" + n + ".log"));
    return out;
  }
  nlohmann::json auto_status(const std::string& store) {
    auto r = etcdadm({"auto", "status", "--store", store, "-o", "json"});
    return r.exit_code == 0 ? nlohmann::json::parse(r.output.substr(r.output.find('{'))) : nlohmann::json::object();
  }
  // Every node's controller registered with its member running, then `etcdadm auto adopt`, then
  // every controller running the adopted cluster.
  void adopt_stacked_control_plane(const std::string& store) {
    ASSERT_TRUE(holds_within(60s, [&] {
      const auto hosts = auto_status(store).value("hosts", nlohmann::json::array());
      return hosts.size() == names_.size() && std::all_of(hosts.begin(), hosts.end(), [](const auto& h) {
               return h["data"] == "member" && h["etcdRunning"].template get<bool>();
             });
    })) << "every node's member registered: " << auto_status(store).dump(2) << auto_logs();
    auto adopted = etcdadm({"auto", "adopt", "--store", store, "--certs-dir", pki(0)});
    ASSERT_EQ(adopted.exit_code, 0) << adopted.output << auto_logs();
    EXPECT_NE(adopted.output.find(std::to_string(names_.size()) + " members"), std::string::npos) << adopted.output;
    ASSERT_TRUE(holds_within(60s, [&] {
      const auto hosts = auto_status(store).value("hosts", nlohmann::json::array());
      return hosts.size() == names_.size() && std::all_of(hosts.begin(), hosts.end(), [](const auto& h) {
               const std::string w = h.value("waitingFor", "");
               return w.find("healthy voters, as the spec asks") != std::string::npos ||
                      w.find("the leader's controller acts") != std::string::npos;
             });
    })) << "the controllers running the adopted cluster: " << auto_status(store).dump(2) << auto_logs();
  }

  void take_over_adopt_and_rotate_ca(bool ipv6);

  std::vector<std::string> names_, roots_, manifests_, as_kubeadm_wrote_;
  std::vector<std::unique_ptr<MiniKubelet>> kubelets_;
  std::vector<ChildProcess> autos_;
  ConnectionConfig stacked_;
  std::string image_version_;  // the etcd version of kubeadm's image tag (etcd.local.imageTag)

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

// Three stacked control-plane members grown as kubeadm grows them, kubeadm writing every file
// (grow_stacked_control_plane). Then `etcdadm auto --kubeadm-manifest` on every node takes the
// member over (etcdadm's files beside kubeadm's, the manifest untouched) and `etcdadm auto adopt`
// hands the cluster to the controllers: no etcd restarted, no write failed. Then the controllers
// own the manifests: a CA rotation switches each node in turn, rewriting its manifest as
// etcdadm's and restarting etcd through the kubelet, never two at once. `ipv6`: an IPv6 control
// plane, whose members etcdadm reaches and listens on at [::1], as kubeadm's do.
void Kubeadm::take_over_adopt_and_rotate_ca(bool ipv6) {
  ASSERT_NO_FATAL_FAILURE(grow_stacked_control_plane(3, etcd_under_test(), ipv6));
  const std::string loopback = ipv6 ? "[::1]" : "127.0.0.1";
  Writer writer(stacked_);
  const std::string store = dir_ / "store";
  start_autos(store);
  ASSERT_NO_FATAL_FAILURE(adopt_stacked_control_plane(store));
  for (size_t i = 0; i < names_.size(); ++i) {
    // etcdadm's files for the member, beside kubeadm's; kubeadm's manifest as kubeadm wrote it.
    const auto state = nlohmann::json::parse(read_file(roots_[i] + "/etc/etcdadm/etcdadm.json"));
    EXPECT_EQ(state.value("loopbackAddress", ""), ipv6 ? "::1" : "127.0.0.1") << names_[i];
    EXPECT_TRUE(path_exists(pki(static_cast<int>(i)) + "/etcdctl-etcd-client.crt")) << names_[i];
    const std::string env = read_file(roots_[i] + "/etc/etcdadm/etcd.env");
    EXPECT_NE(env.find("ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL=5s"), std::string::npos) << env;
    EXPECT_NE(env.find("ETCD_LISTEN_METRICS_URLS=http://" + loopback + ":2381"), std::string::npos) << env;
    EXPECT_NE(env.find("https://" + loopback + ":2379"), std::string::npos) << "listens on kubeadm's loopback:\n" << env;
    EXPECT_EQ(read_file(manifests_[i]), as_kubeadm_wrote_[i]) << "kubeadm's manifest changed";
  }
  std::cout << "writes while taken over and adopted: " << writer.writes() << ", longest gap "
            << writer.longest_outage().count() << " ms\n";
  EXPECT_EQ(writer.last_error(), "") << "a write failed";
  EXPECT_LT(writer.longest_outage(), 1000ms);
  for (size_t i = 0; i < names_.size(); ++i) EXPECT_EQ(kubelets_[i]->starts(), 1) << names_[i] << "'s etcd was restarted";

  const int writes_before = writer.writes();
  auto rotation = etcdadm({"auto", "rotate-ca", "--store", store, "--certs-dir", pki(0), "--reason", "test"});
  ASSERT_EQ(rotation.exit_code, 0) << rotation.output;
  ASSERT_TRUE(holds_within(240s, [&] { return !auto_status(store)["caRotation"]["completed"].is_null(); }))
      << "the rotation completed: " << auto_status(store).dump(2) << auto_logs();
  writer.stop();
  std::cout << "writes through the CA rotation: " << writer.writes() - writes_before << ", longest gap "
            << writer.longest_outage().count() << " ms, last error: " << writer.last_error() << "\n";
  EXPECT_LT(writer.longest_outage(), 3000ms) << "one member restarted at a time";
  for (size_t i = 0; i < names_.size(); ++i) {
    const std::string now = read_file(manifests_[i]);
    EXPECT_NE(now.find("etcdadm.io/config-dir: \"" + roots_[i] + "/etc/etcdadm\""), std::string::npos)
        << names_[i] << "'s manifest is etcdadm's now:\n" << now;
    EXPECT_NE(now.find("registry.k8s.io/etcd:" + etcd_under_test().version + "-0"), std::string::npos)
        << "kubeadm's image kept:\n" << now;
    EXPECT_NE(now.find("ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL"), std::string::npos) << "kubeadm's flags kept:\n" << now;
    EXPECT_NE(now.find("\n  name: \"etcd\"\n"), std::string::npos) << "kubeadm's pod name kept:\n" << now;
    EXPECT_NE(now.find("https://" + loopback + ":2379"), std::string::npos) << "kubeadm's loopback kept:\n" << now;
    EXPECT_GT(kubelets_[i]->starts(), 1) << names_[i] << " restarted on the new CA";
    std::cout << names_[i] << "'s etcd started by its kubelet " << kubelets_[i]->starts() << " times\n";
    EXPECT_FALSE(path_exists(roots_[i] + "/etc/kubernetes/etcd.yaml.etcdadm-stopped")) << names_[i];
  }
  EXPECT_EQ(EtcdClient(stacked_).member_list().members_size(), 3) << "the same members, on the new CA";
}

TEST_F(Kubeadm, ThreeStackedMembersAreTakenOverByAutoUnderTheKubeletAndAdoptedInPlace) {
  if (etcd_under_test().minor_number() < 6) {
    ETCDADM_SKIP_BY_DESIGN() << "kubeadm v1.37.2's manifest passes --feature-gates, a 3.6+ flag";
    return;
  }
  take_over_adopt_and_rotate_ca(/*ipv6=*/false);
}

// The same on an IPv6 control plane (IPv6 addresses advertised; kubeadm listens on [::1] and its
// certificates name it). Newest minor only: the IPv4 test covers the others.
TEST_F(Kubeadm, AnIpv6StackedControlPlaneIsTakenOverAdoptedAndRotatesItsCa) {
  if (pinned_minor_beside(etcd_under_test().minor, 1) != "") {
    ETCDADM_SKIP_BY_DESIGN() << "runs on the newest minor (3.7)";
    return;
  }
  take_over_adopt_and_rotate_ca(/*ipv6=*/true);
}

// A stacked control plane on the minor before the newest, taken over and adopted, then moved to the
// newest by `etcdadm seed --version`: each node's turn writes etcdadm's manifest with kubeadm's
// image of the new version (registry.k8s.io/etcd:<version>-0, which the test's kubelet runs as that
// release), one node at a time, after a raft snapshot on the old binary (3.6 -> 3.7 replays no v2
// entry). Newest minor only: it needs the one before.
TEST_F(Kubeadm, AnAdoptedStackedControlPlaneChangesVersionThroughTheControllers) {
  const std::string before = pinned_minor_beside(etcd_under_test().minor, -1);
  if (etcd_under_test().minor_number() < 7 || pinned_minor_beside(etcd_under_test().minor, 1) != "") {
    ETCDADM_SKIP_BY_DESIGN() << "runs from the newest minor (3.7), from the one before it";
    return;
  }
  const EtcdRelease from = etcd_release(before);
  ASSERT_NO_FATAL_FAILURE(grow_stacked_control_plane(3, from));
  Writer writer(stacked_);
  const std::string store = dir_ / "store";
  start_autos(store);
  ASSERT_NO_FATAL_FAILURE(adopt_stacked_control_plane(store));
  const std::string to = etcd_under_test().version;
  auto seeded = etcdadm({"seed", "--store", store, "--certs-dir", pki(0), "--version", to});
  ASSERT_EQ(seeded.exit_code, 0) << seeded.output;
  ASSERT_TRUE(holds_within(300s, [&] {
    try {
      const auto info = cluster_info(stacked_, 0);
      return info.members.size() == 3 && std::all_of(info.members.begin(), info.members.end(), [&](const auto& m) {
               return m.reachable && m.version == to;
             });
    } catch (const Error&) {
      return false;
    }
  })) << "every member on " << to << ": " << auto_status(store).dump(2) << auto_logs();
  writer.stop();
  std::cout << "writes through " << from.version << " -> " << to << ": " << writer.writes() << ", longest gap "
            << writer.longest_outage().count() << " ms, last error: " << writer.last_error() << "\n";
  EXPECT_LT(writer.longest_outage(), 3000ms) << "one member restarted at a time";
  for (size_t i = 0; i < names_.size(); ++i) {
    const std::string now = read_file(manifests_[i]);
    EXPECT_NE(now.find("image: \"registry.k8s.io/etcd:" + to + "-0\""), std::string::npos) << now;
    EXPECT_NE(now.find("etcdadm.io/config-dir"), std::string::npos) << now;
    EXPECT_EQ(now.find("ETCD_SNAPSHOT_COUNT\"\n          value: \"1\""), std::string::npos) << "left on 1:\n" << now;
    EXPECT_NE(now.find("ETCD_SNAPSHOT_COUNT\"\n          value: \"10000\""), std::string::npos)
        << "kubeadm's snapshot count kept:\n" << now;
  }
}

}  // namespace
}  // namespace etcdadm::test

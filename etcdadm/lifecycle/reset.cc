#include "etcdadm/lifecycle/reset.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#include "common/error.h"
#include "common/file_users.h"
#include "common/fs.h"
#include "common/timefmt.h"
#include "etcd/client.h"
#include "etcdadm/init_system.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/member_health.h"
#include "etcdadm/member_remove.h"
#include "etcdadm/pki.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// The member list through the first endpoint that answers; nullopt when none does.
std::optional<etcdserverpb::MemberListResponse> reachable_member_list(const MemberConfig& m,
                                                                      const std::vector<std::string>& endpoints,
                                                                      std::unique_ptr<EtcdClient>& client,
                                                                      std::string& failures) {
  for (const auto& ep : endpoints) {
    try {
      auto c = std::make_unique<EtcdClient>(connection_to(m, {ep}));
      auto list = c->member_list();
      client = std::move(c);
      return list;
    } catch (const Error& e) {
      failures += (failures.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  return std::nullopt;
}

// The kubelet stops a static pod some time after its manifest is gone: the data dir must not be
// deleted under a running etcd.
void wait_until_stopped(const MemberConfig& m, std::chrono::milliseconds grace) {
  ConnectionConfig c = local_connection(m);
  c.dial_timeout = 1s;
  c.command_timeout = 2s;
  auto deadline = Clock::now() + std::max<std::chrono::milliseconds>(grace, 60s);
  while (Clock::now() < deadline) {
    try {
      EtcdClient(c).status(m.loopback_client_url());
    } catch (const Error&) {
      return;  // no answer: stopped
    }
    std::this_thread::sleep_for(1s);
  }
  throw Error(ErrorKind::kTimeout,
              "etcd still answers on " + m.loopback_client_url() + " after its manifest was removed",
              "check the kubelet (crictl ps); the data dir was left in place");
}

void remove_from_cluster(const ResetOptions& o, ResetResult& result) {
  const MemberConfig& m = o.member;
  if (!path_exists(m.cert("etcdctl-etcd-client"))) {
    spdlog::info("no client certificate left in {}: membership was handled by an earlier reset", m.certs_dir);
    return;
  }
  std::vector<std::string> endpoints = cluster_endpoints_of(m, o.endpoints);
  std::unique_ptr<EtcdClient> client;
  std::string failures;
  auto list = reachable_member_list(m, endpoints, client, failures);
  if (!list) {
    // Not even --force skips this: a member left in the membership is a ghost voter that lowers
    // the cluster's fault tolerance. Skipping has to be said explicitly.
    throw Error(ErrorKind::kUnavailable, "cannot reach the cluster to remove member " + m.name + ": " + failures,
                "pass --endpoints of a running member; or, when it was removed already (or the whole cluster is "
                "being rebuilt), --skip-remove-member");
  }
  const auto* me = find_by_peer_url(*list, m.peer_url());
  if (me == nullptr) {
    for (const auto& x : list->members()) {
      if (x.name() == m.name) {
        throw Error(ErrorKind::kInvalidArgument,
                    "the cluster has a member named " + m.name + " but with peer URL " +
                        (x.peerurls().empty() ? "?" : x.peerurls(0)) + ", not " + m.peer_url(),
                    "pass the member's --bind-address/--peer-port (or --config-dir of its state file), or "
                    "--skip-remove-member");
      }
    }
    spdlog::info("member {} ({}) is not in the cluster (removed earlier)", m.name, m.peer_url());
    return;
  }
  const uint64_t id = me->id();
  int voters = 0;
  for (const auto& x : list->members()) voters += x.islearner() ? 0 : 1;
  if (!me->islearner() && voters <= 1) {
    if (!o.force) {
      throw Error(ErrorKind::kInvalidArgument,
                  "member " + m.name + " is the last voting member: resetting it destroys the cluster and its data",
                  "take a backup first (etcdadm backup save), then pass --force");
    }
    spdlog::warn("--force: resetting the last member; the cluster's data goes with it");
    return;  // a one-member cluster cannot remove its only voter; the data dir goes below
  }
  // Through another member when there is one: the member being removed shuts down as soon as it
  // applies its removal, and its answer may never come.
  std::vector<std::string> others;
  for (const auto& x : list->members()) {
    if (x.id() == id) continue;
    for (const auto& u : x.clienturls()) others.push_back(u);
  }
  std::unique_ptr<EtcdClient> via_other;
  if (!others.empty()) via_other = std::make_unique<EtcdClient>(connection_to(m, others));
  EtcdClient& remover = via_other ? *via_other : *client;
  remove_member_through(remover, id, m.name);
  result.member_removed = true;
}

}  // namespace

ResetResult run_reset(const ResetOptions& o) {
  ResetResult result;
  const MemberConfig& m = o.member;
  // Before anything changes (membership included): a process other than this member's etcd that
  // holds its data dir (a hand-started etcd of another binary, a tool reading the db) stops reset.
  refuse_if_held_by_others(m.data_dir, m.etcd_binary(), "reset the member that uses",
                           "stop the process shown (or wait for it), then run reset again; nothing was changed");
  if (!o.skip_remove_member) remove_from_cluster(o, result);

  auto init_system = make_init_system(m.init_system);
  init_system->stop(m, o.stop_grace);
  if (m.init_system == InitSystemKind::kKubelet) wait_until_stopped(m, o.stop_grace);

  // Whatever still holds the data dir (an etcd started by hand, or by another init system than the
  // one recorded) would keep writing into deleted files: delete nothing while it runs.
  refuse_if_in_use(m.data_dir, "delete the data dir",
                   "stop the etcd that uses it (kill the PID shown, or its service), then run reset again");
  std::vector<std::string> paths = {m.data_dir, m.env_file(), m.etcdctl_env_file(), m.etcdctl_wrapper()};
  for (const auto& f : init_system->files(m)) paths.push_back(f);
  for (const auto& stem : member_cert_names()) {
    paths.push_back(m.cert(stem));
    paths.push_back(m.key(stem));
  }
  if (o.remove_ca) {
    paths.push_back(m.ca_cert());
    paths.push_back(m.ca_key());
  }
  if (o.remove_binaries) {
    for (const char* bin : {"etcd", "etcdctl", "etcdutl"}) paths.push_back(m.install_dir + "/" + bin);
  }
  paths.push_back(m.config_dir + "/restore-pending");
  // What join --replace and upgrade recorded of this member: nothing a later member should inherit.
  for (const char* f : {"/replacing", "/upgrade.json", "/upgrade.lock"}) paths.push_back(m.config_dir + f);
  if (o.remove_binaries) paths.push_back(m.install_dir + "/etcd-releases");
  paths.push_back(m.state_file());  // last: a reset that stops early can run again with --config-dir only
  for (const auto& p : paths) {
    if (!path_exists(p)) continue;
    if (p == m.data_dir && o.keep_data) {
      // Renamed beside it (moved inside it when it is its disk's root), left empty (common/fs.h).
      result.data_set_aside =
          set_aside_data_dir(p, "reset-" + std::to_string(to_unix_micros(std::chrono::system_clock::now()) / 1000000));
      continue;
    }
    if (p == m.data_dir) {
      remove_data_dir(p);  // a data dir on its own disk is emptied, its mount left alone
    } else {
      remove_all(p);
    }
    result.removed_paths.push_back(p);
  }
  for (const auto& dir : {m.certs_dir, m.config_dir}) {
    if (is_directory(dir) && is_missing_or_empty_dir(dir)) {
      remove_all(dir);
      result.removed_paths.push_back(dir);
    }
  }
  return result;
}

}  // namespace etcdadm

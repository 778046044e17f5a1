#include "etcdadm/lifecycle/recover.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "etcd/client.h"
#include "etcdadm/init_system.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/member_health.h"

namespace etcdadm {

namespace {

constexpr const char* kForceNewCluster = "ETCD_FORCE_NEW_CLUSTER";

// The member's env file with ETCD_FORCE_NEW_CLUSTER set (`on`) or gone.
void set_force_new_cluster(const MemberConfig& m, bool on) {
  EnvVars env = parse_env_file(read_file(m.env_file()));
  std::erase_if(env, [](const auto& kv) { return kv.first == kForceNewCluster; });
  if (on) env.emplace_back(kForceNewCluster, "true");
  write_file_atomic(m.env_file(), render_env_file(env), 0600, /*overwrite=*/true);
}

std::string member_names(const std::vector<const MemberInfo*>& members) {
  std::string out;
  for (const auto* m : members) out += (out.empty() ? "" : ", ") + (m->name.empty() ? id_hex(m->id) : m->name);
  return out;
}

// The member answers Status (it may have no leader): started, its WAL replayed.
etcdserverpb::StatusResponse wait_answering(const MemberConfig& m, EtcdClient& local, InitSystem& init_system,
                                            std::chrono::seconds timeout) {
  etcdserverpb::StatusResponse status;
  wait_until(
      "member " + m.name + " to answer", timeout, [&] { status = local.status(m.loopback_client_url()); },
      [&] { return member_alive(m, init_system); }, member_log_hint(m));
  return status;
}

}  // namespace

RecoverResult run_recover(const RecoverOptions& options) {
  const MemberConfig& m = options.member;
  auto init_system = make_init_system(m.init_system);
  if (init_system->kind() == InitSystemKind::kKubelet) {
    throw Error(ErrorKind::kInvalidArgument,
                "member " + m.name + " runs as a static pod, whose flags are its manifest's: recover does not edit it",
                "add --force-new-cluster to the manifest's etcd command for one start, then remove it (etcd's own "
                "disaster recovery), or run the member with the process or systemd init system");
  }
  if (!path_exists(m.env_file())) {
    throw Error(ErrorKind::kNotFound, "member " + m.name + " has no env file (" + m.env_file() + ")",
                "point --config-dir at the member's config dir");
  }
  // Its own data first: whatever it committed is in its WAL, which only etcd reads.
  if (!init_system->running(m)) init_system->start(m);
  EtcdClient local(local_connection(m));
  const auto own = wait_answering(m, local, *init_system, options.timeout);
  RecoverResult r;
  r.member_id = own.header().member_id();
  r.cluster_id = own.header().cluster_id();
  r.revision_before = own.header().revision();
  r.client_url = m.client_url();

  const ClusterInfo info = cluster_info(local_connection(m), r.member_id);
  std::vector<const MemberInfo*> voters, answering, ahead;
  for (const auto& mi : info.members) {
    if (mi.id == r.member_id && mi.learner) {
      throw Error(ErrorKind::kInvalidArgument,
                  "member " + m.name + " is a learner: it may not hold every committed write",
                  "recover on a voting member (etcdadm info lists them)");
    }
    if (mi.learner) continue;
    voters.push_back(&mi);
    if (mi.reachable) answering.push_back(&mi);
    if (mi.reachable && mi.id != r.member_id && mi.revision > r.revision_before) ahead.push_back(&mi);
    if (mi.id != r.member_id) r.removed.push_back({mi.name, mi.id, mi.peer_urls});
  }
  for (const auto& mi : info.members) {
    if (mi.learner) r.removed.push_back({mi.name, mi.id, mi.peer_urls});
  }
  std::sort(r.removed.begin(), r.removed.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  if (info.leader_id != 0 && answering.size() * 2 > voters.size()) {
    throw Error(
        ErrorKind::kInUse,
        "the cluster has a quorum: " + std::to_string(answering.size()) + " of " + std::to_string(voters.size()) +
            " voters answer (" + member_names(answering) +
            ") with a leader; recovering here would make a second cluster",
        "replace each lost member instead: on its host, `etcdadm join " + r.client_url + " --replace <its name>`");
  }
  if (!ahead.empty()) {
    std::string who;
    for (const auto* a : ahead) {
      who += (who.empty() ? "" : ", ") + a->name + " (revision " + std::to_string(a->revision) + ")";
    }
    const std::string why = "other members that answer are further along than " + m.name + " (revision " +
                            std::to_string(r.revision_before) + "): " + who;
    if (!options.force) {
      throw Error(ErrorKind::kInUse, why, "recover on the member furthest along, or give --force to lose what it has");
    }
    r.overridden.push_back(why);
    spdlog::warn("recover: --force: {}", why);
  }

  // Copied aside while stopped: the data as it was, whatever the forced start does to it.
  init_system->stop(m, std::chrono::milliseconds(10000));
  r.set_aside =
      m.data_dir + ".set-aside-recover-" + std::to_string(to_unix_micros(std::chrono::system_clock::now()) / 1000000);
  std::error_code ec;
  std::filesystem::copy(m.data_dir, r.set_aside,
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks, ec);
  if (ec) {
    throw Error(ErrorKind::kIo, "copying " + m.data_dir + " aside to " + r.set_aside + ": " + ec.message(),
                "free room for a copy of the data dir (nothing was changed yet; the member is stopped: start it "
                "with `etcdadm member restart` or its service)");
  }
  spdlog::info("recover: {} copied aside to {}", m.data_dir, r.set_aside);

  // One start with --force-new-cluster, then the member as it always runs. The flag goes from the
  // env file whatever happens: a later restart must never force again.
  try {
    set_force_new_cluster(m, true);
    init_system->start(m);
    wait_member_healthy(m, local, *init_system, options.timeout);
    set_force_new_cluster(m, false);
  } catch (...) {
    set_force_new_cluster(m, false);
    throw;
  }
  restart_member(m, *init_system, options.timeout);
  const auto now = local.status(m.loopback_client_url());
  r.revision = now.header().revision();
  r.cluster_id = now.header().cluster_id();
  const auto members = local.member_list();
  if (members.members_size() != 1) {
    throw Error(ErrorKind::kInternal,
                "member " + m.name + " started with --force-new-cluster but lists " +
                    std::to_string(members.members_size()) + " members",
                "see its log: " + member_log_hint(m));
  }
  return r;
}

}  // namespace etcdadm

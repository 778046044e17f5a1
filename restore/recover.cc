#include "restore/recover.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "etcd/client.h"
#include "etcd/datadir/bolt_reader.h"
#include "etcd/datadir/mvcc.h"
#include "etcd/datadir/snapshot_inspect.h"
#include "etcdadm/init_system.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/member_health.h"
#include "restore/data_dir.h"
#include "restore/pitr.h"
#include "restore/private_etcd.h"

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

// What the member holds when it cannot answer itself (a stopped member whose peers are gone never
// serves: etcd waits for a quorum before it opens its client port): its data dir copied into
// `scratch` and started there once with --force-new-cluster as a private member on unix sockets
// (restore/private_etcd.h), so that etcd itself replays its WAL to every entry it knew committed
// and no client ever sees it. Afterwards `scratch`/data is that data, stopped cleanly (its db
// holds everything the member had committed).
etcdserverpb::StatusResponse probe_member(const MemberConfig& m, const std::string& scratch,
                                          std::chrono::seconds timeout) {
  const std::string data = scratch + "/data";
  std::error_code ec;
  std::filesystem::copy(m.data_dir, data,
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks, ec);
  if (ec) {
    throw Error(ErrorKind::kIo, "copying " + m.data_dir + " to " + data + " to read what it holds: " + ec.message(),
                "free room for a copy of the data dir beside it (nothing was changed)");
  }
  SocketDir sockets(scratch);
  PrivateEtcd probe("recover", m.etcd_binary(), data, m.name, scratch + "/etcd.log", sockets.path(),
                    std::filesystem::file_size(data + "/member/snap/db"));
  probe.start_and_wait(timeout, {"--force-new-cluster"});
  ConnectionConfig c;
  c.endpoints = {probe.client_url()};
  auto status = EtcdClient(c).status(probe.client_url());
  probe.stop();
  return status;
}

// How far the store's change log of the member's cluster reaches from the member's own db.
struct LogReach {
  int64_t db_revision = 0;
  changelog::LogChain chain;  // from db_revision on, without a gap
  int64_t newest = 0;         // the last revision of any segment (past a gap, perhaps)
};

LogReach log_reach(const RecoverOptions& o, const std::string& cluster_hex, const std::string& db_path) {
  LogReach r;
  {
    auto db = BoltReader::open(db_path, 0);
    r.db_revision = store_revision(*db);
  }
  auto segments = changelog::list_segments(**o.store, cluster_hex);
  if (o.segment_accepted) std::erase_if(segments, [&](const auto& s) { return !o.segment_accepted(s); });
  for (const auto& s : segments) r.newest = std::max(r.newest, s.last_revision);
  r.chain = changelog::chain_from(segments, r.db_revision);
  return r;
}

// The member's db plus the log after it, restored natively into its data dir as a new one-member
// cluster that keeps the member's name and peer URL. The data dir is replaced only once all of it
// is written (data_dir.h); the original was copied aside before.
void restore_from_log(const RecoverOptions& o, const std::string& cluster_hex, const std::string& member_db,
                      RecoverResult& r) {
  const MemberConfig& m = o.member;
  std::string db;
  StagingDir staging(restore_staging_parent(resolved_data_dir(m.data_dir)));
  db = staging.path() + "/member.db";
  std::filesystem::copy_file(member_db, db);
  PointInTime end;
  end.log_end = true;
  end.segment_accepted = o.segment_accepted;
  const ReplayResult replayed =
      replay_log_onto(*o.store, ReplayBase{cluster_hex, "member " + m.name + "'s data"}, db, 0, end);
  r.log_records = replayed.records;
  RestoreOptions ro;
  ro.data_dir = m.data_dir;
  ro.name = m.name;
  ro.initial_advertise_peer_urls = m.peer_url();
  ro.initial_cluster = m.name + "=" + m.peer_url();
  ro.initial_cluster_token = "etcdadm-recover-" + random_hex(8);
  ro.force = true;
  ro.method = o.method;
  ro.target_version = m.version;
  const RestoreResult restored = restore_verified_snapshot_file(db, std::filesystem::file_size(db), ro, true);
  r.revision_bump = restored.revision_bump;
  // The env file describes the cluster the data dir now holds (etcd reads these only without one).
  EnvVars env = parse_env_file(read_file(m.env_file()));
  for (auto& [k, v] : env) {
    if (k == "ETCD_INITIAL_CLUSTER") v = ro.initial_cluster;
    if (k == "ETCD_INITIAL_CLUSTER_TOKEN") v = ro.initial_cluster_token;
    if (k == "ETCD_INITIAL_CLUSTER_STATE") v = "new";
  }
  write_file_atomic(m.env_file(), render_env_file(env), 0600, /*overwrite=*/true);
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
  if (!path_exists(m.data_dir + "/member/snap/db")) {
    throw Error(ErrorKind::kNotFound, "member " + m.name + " has no data (" + m.data_dir + "/member/snap/db)",
                "recover on a host whose member survived with its data dir");
  }
  RecoverResult r;
  r.client_url = m.client_url();

  // What answers: this member (running without a leader, it still answers Status) and the others.
  const bool was_running = init_system->running(m);
  EtcdClient local(local_connection(m));
  std::optional<etcdserverpb::StatusResponse> own;
  if (was_running) {
    try {
      own = local.status(m.loopback_client_url());
    } catch (const Error& e) {
      spdlog::info("recover: member {} does not answer ({}): what it holds is read from its data dir", m.name,
                   e.what());
    }
  }
  std::optional<ClusterInfo> info;
  {
    ConnectionConfig conn = local_connection(m);
    conn.endpoints = cluster_endpoints_of(m, {});
    if (own) conn.endpoints.insert(conn.endpoints.begin(), m.loopback_client_url());
    try {
      info = cluster_info(conn, own ? own->header().member_id() : 0);
    } catch (const Error& e) {
      spdlog::info("recover: no member answers ({})", e.what());
    }
  }
  if (info) {
    std::vector<const MemberInfo*> voters, answering;
    for (const auto& mi : info->members) {
      if (mi.learner) continue;
      voters.push_back(&mi);
      if (mi.reachable) answering.push_back(&mi);
    }
    if (info->leader_id != 0 && answering.size() * 2 > voters.size()) {
      throw Error(
          ErrorKind::kInUse,
          "the cluster has a quorum: " + std::to_string(answering.size()) + " of " + std::to_string(voters.size()) +
              " voters answer (" + member_names(answering) +
              ") with a leader; recovering here would make a second cluster",
          "replace each lost member instead: on its host, `etcdadm join " + r.client_url + " --replace <its name>`");
    }
  }

  // What the member holds: what it answered, or what it serves when forced alone in private.
  if (was_running) init_system->stop(m, std::chrono::milliseconds(10000));
  std::optional<StagingDir> probe_dir;
  std::string member_db = m.data_dir + "/member/snap/db";
  etcdserverpb::StatusResponse held;
  if (own) {
    held = *own;
  } else {
    probe_dir.emplace(restore_staging_parent(resolved_data_dir(m.data_dir)));
    held = probe_member(m, probe_dir->path(), options.timeout);
    member_db = probe_dir->path() + "/data/member/snap/db";
  }
  r.member_id = held.header().member_id();
  r.cluster_id = held.header().cluster_id();
  r.previous_cluster_id = r.cluster_id;
  r.revision_before = held.header().revision();
  spdlog::info("recover: member {} ({}) holds revision {} of cluster {}", m.name, id_hex(r.member_id),
               r.revision_before, id_hex(r.cluster_id));

  // Refusals that need what it holds; nothing is changed yet (a stopped member is started again).
  std::vector<std::string> refusal;  // {why, hint}
  std::vector<SnapshotMember> recorded;
  if (info) {
    std::vector<const MemberInfo*> ahead;
    for (const auto& mi : info->members) {
      if (mi.id == r.member_id && mi.learner) {
        refusal = {"member " + m.name + " is a learner: it may not hold every committed write",
                   "recover on a voting member (etcdadm info lists them)"};
      }
      if (mi.reachable && mi.id != r.member_id && !mi.learner && mi.revision > r.revision_before) ahead.push_back(&mi);
      recorded.push_back({mi.id, mi.name, mi.peer_urls, mi.client_urls, mi.learner});
    }
    if (refusal.empty() && !ahead.empty()) {
      std::string who;
      for (const auto* a : ahead) {
        who += (who.empty() ? "" : ", ") + a->name + " (revision " + std::to_string(a->revision) + ")";
      }
      const std::string why = "other members that answer are further along than " + m.name + " (revision " +
                              std::to_string(r.revision_before) + "): " + who;
      if (!options.force) {
        refusal = {why, "recover on the member furthest along, or give --force to lose what it has"};
      } else {
        r.overridden.push_back(why);
        spdlog::warn("recover: --force: {}", why);
      }
    }
  } else {
    // Nobody answers: the members as the member's db last recorded them (the names of the lost).
    auto db = BoltReader::open(m.data_dir + "/member/snap/db");
    recorded = snapshot_members(*db);
  }
  if (!refusal.empty()) {
    if (was_running) init_system->start(m);
    throw Error(ErrorKind::kInUse, refusal[0], refusal[1]);
  }
  for (const auto& mi : recorded) {
    if (mi.id != r.member_id) r.removed.push_back({mi.name.empty() ? id_hex(mi.id) : mi.name, mi.id, mi.peer_urls});
  }
  std::sort(r.removed.begin(), r.removed.end(), [](const auto& a, const auto& b) { return a.name < b.name; });

  // Copied aside while stopped: the data as it was, whatever the recovery does to it.
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

  // The newest of the two sources: the member's data, or its db plus the change log after it.
  const std::string cluster_hex = id_hex(r.previous_cluster_id);
  if (own) member_db = r.set_aside + "/member/snap/db";  // stopped cleanly just now: all it had applied
  if (options.store) {
    const LogReach reach = log_reach(options, cluster_hex, member_db);
    r.log_reaches = reach.chain.segments.empty() ? 0 : reach.chain.reaches;
    if (r.log_reaches > r.revision_before) {
      r.source = RecoverResult::Source::kChangeLog;
    } else if (reach.newest > r.revision_before) {
      r.log_not_taken = "the change log goes on to revision " + std::to_string(reach.newest) +
                        " but not from the member's db (revision " + std::to_string(reach.db_revision) +
                        "): nothing of it follows revision " + std::to_string(reach.chain.reaches);
      spdlog::warn("recover: {}", r.log_not_taken);
    }
    spdlog::info("recover: {} served revision {}; the change log in the store reaches {} from its db: {} wins", m.name,
                 r.revision_before, r.log_reaches,
                 r.source == RecoverResult::Source::kChangeLog ? "the change log" : "the member's data");
  }
  if (r.source == RecoverResult::Source::kChangeLog) {
    restore_from_log(options, cluster_hex, member_db, r);
    init_system->start(m);
    wait_member_healthy(m, local, *init_system, options.timeout);
  } else {
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
  }
  const auto now = local.status(m.loopback_client_url());
  r.revision = now.header().revision();
  r.cluster_id = now.header().cluster_id();
  r.member_id = now.header().member_id();
  const auto members = local.member_list();
  if (members.members_size() != 1) {
    throw Error(ErrorKind::kInternal,
                "member " + m.name + " started as a cluster of one but lists " +
                    std::to_string(members.members_size()) + " members",
                "see its log: " + member_log_hint(m));
  }
  return r;
}

}  // namespace etcdadm

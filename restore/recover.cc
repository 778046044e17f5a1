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
#include "etcd/datadir/raft_files.h"
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
// A member's answer on a network etcd runs on comes within this (TCP and TLS handshakes).
constexpr std::chrono::milliseconds kSurveyDialTimeout{1000};

// The member's env file with ETCD_FORCE_NEW_CLUSTER set (`on`) or gone: the flag goes whatever
// happens, so a later restart never forces again (etcd reads it only as it starts).
void set_force_new_cluster(const MemberConfig& m, bool on) {
  set_member_env(m, kForceNewCluster, on ? std::optional<std::string>("true") : std::nullopt);
}

// A copy of the stopped member's data dir at `aside` (beside it, on any filesystem), synced.
void copy_data_dir_aside(const std::string& data_dir, const std::string& aside) {
  std::error_code ec;
  std::filesystem::copy(data_dir, aside,
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks, ec);
  if (ec) {
    std::filesystem::remove_all(aside, ec);
    throw Error(ErrorKind::kIo, "copying " + data_dir + " aside to " + aside + ": " + ec.message(),
                "free room for a copy of the data dir (nothing was changed; the member was started again)");
  }
  fsync_dir(std::filesystem::path(aside).parent_path().string());
  spdlog::info("recover: {} copied aside to {}", data_dir, aside);
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
  make_dirs(data, 0700);
  std::error_code ec;
  std::filesystem::copy(m.data_dir + "/member", data + "/member",
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks, ec);
  if (ec) {
    throw Error(ErrorKind::kIo,
                "copying " + m.data_dir + "/member to " + data + " to read what it holds: " + ec.message(),
                "free room for a copy of the member's data beside its data dir (nothing was changed)");
  }
  SocketDir sockets(scratch);
  PrivateEtcd probe("recover", m.etcd_binary(), data, m.name, scratch + "/etcd.log", sockets.path(),
                    std::filesystem::file_size(data + "/member/snap/db"));
  // --snapshot-count 1: the forced start's configuration changes, once applied, make etcd take a
  // raft snapshot, so that the member's own start on this copy replays its WAL from there, not the
  // whole of it a second time, and keeps no log from before it: a member that joins is sent the
  // snapshot (the db), so it holds exactly what the db holds.
  probe.start_and_wait(timeout, {"--force-new-cluster", "--snapshot-count", "1"});
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

// The member's db with the log replayed onto it (`db`, consumed), restored natively into its data
// dir (set aside before: absent, or a mount root emptied of its member) as a new one-member cluster
// that keeps the member's name and peer URL.
void restore_from_log(const RecoverOptions& o, const std::string& db, RecoverResult& r) {
  const MemberConfig& m = o.member;
  RestoreOptions ro;
  ro.data_dir = m.data_dir;
  ro.name = m.name;
  ro.initial_advertise_peer_urls = m.peer_url();
  ro.initial_cluster = m.name + "=" + m.peer_url();
  ro.initial_cluster_token = o.cluster_token.empty() ? "etcdadm-recover-" + random_hex(8) : o.cluster_token;
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

// The probe's data (`probed`, holding member/) made the member's: renamed into the data dir.
void move_member_in(const std::string& probed, const std::string& data_dir) {
  make_dirs(data_dir, 0700);
  std::error_code ec;
  std::filesystem::rename(probed + "/member", data_dir + "/member", ec);
  if (ec) throw Error(ErrorKind::kIo, "moving " + probed + "/member into " + data_dir + ": " + ec.message());
  fsync_dir(data_dir);
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
  std::optional<etcdserverpb::StatusResponse> own;
  if (was_running) {
    try {
      // A client of its own, gone before the member stops: etcd's graceful stop waits for the
      // connections it serves over TLS to go (a second and more with one left open).
      own = EtcdClient(local_connection(m)).status(m.loopback_client_url());
    } catch (const Error& e) {
      spdlog::info("recover: member {} does not answer ({}): what it holds is read from its data dir", m.name,
                   e.what());
    }
  }
  std::optional<ClusterInfo> info;
  {
    ConnectionConfig conn = local_connection(m);
    conn.endpoints = cluster_endpoints_of(m, {});
    // Most members are gone: one whose host refuses the connection is passed over at once, and
    // one that does not answer at all costs the survey its (short) dial timeout.
    conn.dial_timeout = std::min(conn.dial_timeout, kSurveyDialTimeout);
    if (own) conn.endpoints.insert(conn.endpoints.begin(), m.loopback_client_url());
    try {
      info = cluster_info_failing_fast(conn, own ? own->header().member_id() : 0);
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

  // Refusals: nothing is changed (a stopped member stays stopped, a running one runs on).
  auto check_refusals = [&](const etcdserverpb::StatusResponse& held) {
    r.member_id = held.header().member_id();
    r.cluster_id = held.header().cluster_id();
    r.previous_cluster_id = r.cluster_id;
    r.revision_before = held.header().revision();
    if (!info) return;
    std::vector<const MemberInfo*> ahead;
    for (const auto& mi : info->members) {
      if (mi.id == r.member_id && mi.learner) {
        throw Error(ErrorKind::kInUse, "member " + m.name + " is a learner: it may not hold every committed write",
                    "recover on a voting member (etcdadm info lists them)");
      }
      if (mi.reachable && mi.id != r.member_id && !mi.learner && mi.revision > r.revision_before) ahead.push_back(&mi);
    }
    if (ahead.empty()) return;
    std::string who;
    for (const auto* a : ahead)
      who += (who.empty() ? "" : ", ") + a->name + " (revision " + std::to_string(a->revision) + ")";
    const std::string why = "other members that answer are further along than " + m.name + " (revision " +
                            std::to_string(r.revision_before) + "): " + who;
    if (!options.force) {
      throw Error(ErrorKind::kInUse, why, "recover on the member furthest along, or give --force to lose what it has");
    }
    if (r.overridden.empty()) {
      r.overridden.push_back(why);
      spdlog::warn("recover: --force: {}", why);
    }
  };
  if (own) check_refusals(*own);

  // What the member holds. The member is stopped gracefully, never killed: etcd writes a commit
  // index it learns without new entries to its WAL unsynced, so a killed (or crashed) member's WAL
  // may hold as uncommitted entries its db has applied; a forced start drops those from the log
  // and keeps them in the db, and a member that joins later is sent that log and misses them.
  // The member is forced alone in place (one start) when either holds:
  // - it answered and, stopped gracefully (which flushes its commit index), its db applied nothing
  //   past the commit index it answered with (Status raftIndex): its log lacks nothing its db has;
  // - its data holds a raft snapshot: its log then begins after that snapshot, so every member
  //   that joins is sent the db (etcd's snapshot message, at its applied index), never the log
  //   whose last entries the forced start dropped.
  // Otherwise (a member that never took a raft snapshot, killed or restarted since it last heard
  // the commit index) a copy of its data is forced alone in private first with a raft snapshot at
  // once (--snapshot-count 1), and that copy moves into place: two starts.
  if (was_running) init_system->stop(m, std::chrono::milliseconds(10000));
  const uint64_t raft_snapshot = newest_raft_snapshot_index(m.data_dir + "/member/snap");
  bool in_place = raft_snapshot > 0;
  if (in_place) {
    spdlog::info("recover: {}'s raft log begins after its raft snapshot at index {}: forced alone in place", m.name,
                 raft_snapshot);
  } else if (own) {
    const uint64_t applied = snapshot_consistent_index(*BoltReader::open(m.data_dir + "/member/snap/db", 0));
    in_place = applied <= own->raftindex();
    if (!in_place) {
      spdlog::info(
          "recover: {}'s db applied entry {}, past the commit index {} it answered with, and it holds no "
          "raft snapshot: read in private",
          m.name, applied, own->raftindex());
    }
  }
  if (in_place && !own) {
    // What it holds, from its files: its IDs from its WAL, its revision from its db.
    try {
      const WalIdentity id = wal_identity(m.data_dir + "/member/wal");
      etcdserverpb::StatusResponse held;
      held.mutable_header()->set_member_id(id.member_id);
      held.mutable_header()->set_cluster_id(id.cluster_id);
      held.mutable_header()->set_revision(store_revision(*BoltReader::open(m.data_dir + "/member/snap/db", 0)));
      check_refusals(held);
    } catch (...) {
      if (was_running) init_system->start(m);
      throw;
    }
  }
  StagingDir staging(restore_staging_parent(resolved_data_dir(m.data_dir)));
  const std::string probed = staging.path() + "/data";
  std::string base_db = (in_place ? m.data_dir : probed) + "/member/snap/db";
  if (!in_place) {
    try {
      const etcdserverpb::StatusResponse held = probe_member(m, staging.path(), options.timeout);
      if (own && held.header().revision() < own->header().revision()) {
        throw Error(ErrorKind::kCorrupt,
                    "member " + m.name + " served revision " + std::to_string(own->header().revision()) +
                        ", but its data, stopped and started alone, holds revision " +
                        std::to_string(held.header().revision()),
                    "nothing was changed: read its log (" + member_log_hint(m) +
                        ") before recovering from it, or recover on another survivor");
      }
      if (!own) check_refusals(held);
    } catch (...) {
      if (was_running) init_system->start(m);
      throw;
    }
  }
  spdlog::info("recover: member {} ({}) holds revision {} of cluster {}", m.name, id_hex(r.member_id),
               r.revision_before, id_hex(r.cluster_id));
  std::vector<SnapshotMember> recorded;
  if (info) {
    for (const auto& mi : info->members) recorded.push_back({mi.id, mi.name, mi.peer_urls, mi.client_urls, mi.learner});
  } else {
    // Nobody answers: the members as the member's db last recorded them (the names of the lost).
    auto db = BoltReader::open(m.data_dir + "/member/snap/db");
    recorded = snapshot_members(*db);
  }
  for (const auto& mi : recorded) {
    if (mi.id != r.member_id) r.removed.push_back({mi.name.empty() ? id_hex(mi.id) : mi.name, mi.id, mi.peer_urls});
  }
  std::sort(r.removed.begin(), r.removed.end(), [](const auto& a, const auto& b) { return a.name < b.name; });

  // The newest of the two sources: the member's data, or its db plus the change log after it.
  const std::string cluster_hex = id_hex(r.previous_cluster_id);
  if (options.store) {
    const LogReach reach = log_reach(options, cluster_hex, base_db);
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

  // The log replayed onto a copy of the member's db before anything of the member's is moved: a
  // damaged segment fails here, with the member's data dir as it was.
  if (r.source == RecoverResult::Source::kChangeLog) {
    if (in_place) {
      make_dirs(probed + "/member/snap", 0700);
      std::filesystem::copy_file(base_db, probed + "/member/snap/db");
      base_db = probed + "/member/snap/db";
    }
    PointInTime end;
    end.log_end = true;
    end.segment_accepted = options.segment_accepted;
    r.log_records =
        replay_log_onto(*options.store, ReplayBase{cluster_hex, "member " + m.name + "'s data"}, base_db, 0, end)
            .records;
  }
  const std::string label = "recover-" + std::to_string(to_unix_micros(std::chrono::system_clock::now()) / 1000000);
  if (in_place && r.source == RecoverResult::Source::kMember) {
    r.set_aside = m.data_dir + ".set-aside-" + label;
    try {
      copy_data_dir_aside(m.data_dir, r.set_aside);
    } catch (...) {
      init_system->start(m);
      throw;
    }
    set_force_new_cluster(m, true);
  } else {
    // Renamed beside it (moved inside it when it is its disk's root), left empty (common/fs.h).
    r.set_aside = set_aside_data_dir(m.data_dir, label);
    spdlog::info("recover: {} set aside as {}", m.data_dir, r.set_aside);
    try {
      if (r.source == RecoverResult::Source::kChangeLog) {
        restore_from_log(options, base_db, r);
      } else {
        move_member_in(probed, m.data_dir);
      }
    } catch (const Error& e) {
      throw Error(e.kind(), std::string(e.what()) + " (the member's data as it was is in " + r.set_aside + ")",
                  "move " + r.set_aside + " back to " + m.data_dir + " to start the member on its own data again");
    }
  }
  try {
    init_system->start(m);
  } catch (...) {
    set_force_new_cluster(m, false);
    throw;
  }
  EtcdClient local(local_connection(m));
  try {
    wait_member_healthy(m, local, *init_system, options.timeout);
  } catch (...) {
    set_force_new_cluster(m, false);
    throw;
  }
  set_force_new_cluster(m, false);  // read at start only: a later restart is an ordinary one
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

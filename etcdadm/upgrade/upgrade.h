// Changing the etcd version a member runs, one member per command, without losing quorum:
//
//   etcdadm upgrade plan                 the members, their versions, the cluster version, whether
//                                        the step to --version is allowed and in which order
//   etcdadm upgrade apply --version V    this host's member to V (up, patch, or down as etcd allows)
//   etcdadm upgrade rollback             this host's member back to the version it ran before
//
// apply runs phases, each safe to run again, and records where it is in <config-dir>/upgrade.json,
// so that a run that was interrupted anywhere is finished by running it again:
//
//   preflight   the whole cluster healthy (every member answers, no alarm), the step allowed by
//               etcd's version rules (etcd_version.h), and the cluster able to lose this member
//               for its restart without losing quorum (quorum.h)
//   backup      a backup of the cluster taken into the store (or a recent one found there)
//   install     the target release installed into <install-dir>/etcd-releases/v<V>/, and the
//               binaries the member runs now kept in etcd-releases/v<old>/ for the rollback
//   downgrade   (a downgrade only) etcd's downgrade validated and enabled, and this member's
//               storage version lowered by etcd, before its binary changes
//   leadership  when this member leads: leadership moved to a healthy voter (MoveLeader), so that
//               the restart costs no election
//   switch      (from before 3.7 to 3.7 or later: first one start on the current binary with
//               --snapshot-count 1, so that 3.7 replays none of the v2 requests older members
//               wrote, on which it panics) the target's binaries renamed into <install-dir> (a
//               running etcd keeps its file; there is always a binary in place), the member's
//               config rewritten (state file, etcdctl.env, unit or manifest) and etcd restarted
//   health      until the member serves linearizable reads, reports version V and has applied
//               everything the leader had committed when it came back
//
// rollback is the same sequence to the version upgrade.json records as the one before, from the
// binaries kept in install, while etcd allows it (the cluster version has not moved, etc.).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/etcd_version.h"
#include "etcdadm/lifecycle/init_join.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/quorum.h"
#include "etcdadm/release/fetch.h"

namespace etcdadm {

// What a member's HTTP /version says (with the client certificate): its binary, the cluster
// version, and from 3.6 its storage version.
struct VersionReport {
  std::string server;
  std::string cluster;
  std::string storage;  // 3.6+; empty otherwise
};
VersionReport read_version_report(const MemberConfig& m, const std::string& client_url);

// The cluster as an upgrade sees it.
struct ClusterSurvey {
  ClusterInfo info;
  std::optional<EtcdVersion> cluster_version;   // nullopt when no member answered /version
  std::optional<EtcdVersion> downgrade_target;  // a downgrade enabled in etcd (3.6+ status)
  std::vector<std::string> alarms;              // "NOSPACE on <member>"...
  std::vector<std::string> problems;            // why the cluster is not healthy (empty: it is)
};
// Members through this host's member, then the endpoints it knew at join, then `extra`.
ClusterSurvey survey_cluster(const MemberConfig& m, const std::vector<std::string>& extra_endpoints);

struct UpgradePlanEntry {
  MemberInfo member;
  std::optional<EtcdVersion> version;  // what it runs (nullopt: it did not answer)
  VersionStep step;
  QuorumCheck quorum;
};

struct UpgradePlan {
  ClusterSurvey survey;
  EtcdVersion target;
  // In the order to go: members already at the target first (nothing to do), then followers,
  // then the leader (its leadership is moved away first).
  std::vector<UpgradePlanEntry> members;
  bool allowed = true;
  std::vector<std::string> problems;  // why not
};
UpgradePlan plan_upgrade(const MemberConfig& m, const std::string& target_version,
                         const std::vector<std::string>& extra_endpoints);

// Takes the backup the change starts from, through `cluster` (or finds a recent enough one in the
// store) and returns its name. Supplied by the layer that knows stores (backup/).
using PreChangeBackup = std::function<std::string(EtcdClient& cluster)>;

struct UpgradeOptions {
  MemberConfig member;                 // from the state file
  ReleaseSpec release;                 // where the target version comes from (its version is the target)
  PreChangeBackup backup;              // empty: no backup (--skip-backup, said explicitly)
  std::vector<std::string> endpoints;  // more members to reach the cluster through
  // A one-member cluster has no quorum while its member restarts: only with this.
  bool allow_downtime = false;
  std::chrono::seconds health_timeout{300};
  std::chrono::milliseconds stop_grace{30000};
};

struct UpgradeResult {
  std::string from;
  std::string to;
  VersionStepKind kind = VersionStepKind::kSame;
  std::string backup;
  std::vector<std::string> phases_run;
  std::vector<std::string> checks;  // what preflight checked, one line each
};

const std::vector<Phase>& upgrade_phases();

// Runs every phase, or only `phase` (the others having run before, as init/join phases).
UpgradeResult run_upgrade(const UpgradeOptions& options, const std::string& phase = {});

// Back to the version the last upgrade of this member started from (upgrade.json), from the
// binaries it kept. Refused once etcd no longer allows it (the cluster version moved).
UpgradeResult run_upgrade_rollback(const UpgradeOptions& options);

// A change of this member's version that started and did not finish (upgrade.json says
// in-progress): a run that was interrupted, or one running now. nullopt when there is none.
struct InterruptedChange {
  std::string from;
  std::string to;
  bool rollback = false;  // finished by `etcdadm upgrade rollback`, not `apply --version <to>`
};
std::optional<InterruptedChange> change_in_progress(const MemberConfig& member);

// Whether a member switched from etcd `from` to `to` first starts once more on `from` with
// --snapshot-count 1 and waits for a raft snapshot: etcd 3.7 reads every entry of its log as a v3
// request and panics at start on the v2 requests 3.5 (and 3.6 before its cluster version was
// decided) wrote, which a member keeps in its WAL until its next raft snapshot. So: leaving a
// release below 3.7 for 3.7 or later. Versions that do not parse: false (the switch refuses them).
bool raft_snapshot_due_before_switch(const std::string& from, const std::string& to);

// <install-dir>/etcd-releases/v<version>: the binaries of one release, kept for switching.
std::string kept_release_dir(const MemberConfig& m, const std::string& version);

// <config-dir>/upgrade.json
std::string upgrade_state_file(const MemberConfig& m);

}  // namespace etcdadm

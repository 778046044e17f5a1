// Restores (controller/decide_restore.cc decides): the restore plan written over the plan read, each
// listed host's member restored natively from the plan's backup (and change log), the hosts left
// out setting their data aside, the command deleted once the restored cluster has a leader; and
// what an auto-restore would restore after a total loss.
#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/failpoint.h"
#include "common/fs.h"
#include "controller/backup_attestation.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "etcdadm/lifecycle/local_member.h"
#include "restore/member_restore.h"
#include "restore/pitr.h"
#include "restore/resolve.h"
#include "restore/restore_method.h"
#include "store/blob_capabilities.h"
#include "store/etcd_manager.h"

namespace etcdadm {

using namespace controller_internal;

namespace {

// The plan's label for data set aside: unique per plan and per attempt (a restore killed half way
// sets its own partial data aside on the next try).
std::string set_aside_label(const ClusterPlan& plan) {
  return "plan" + std::to_string(plan.sequence) + "-" + std::to_string(unix_now());
}

}  // namespace

void Controller::plan_restore(const Decision& d, const Observation& o) {
  // A running cluster is replaced only after a new backup of it (an older one lacks the latest
  // writes): the restore can be undone. Taken only through the leader (this host acts): a member of
  // a cluster without a leader may be behind, and its data is no backup of the cluster.
  if (is_acting(o)) {
    backup_before(d, std::chrono::seconds(0));
  } else if (o.cluster.answered) {
    spdlog::warn(
        "auto: the cluster answers without a leader: no backup is taken before the restore (a member "
        "without a leader may be behind)");
  }
  if (!replace_plan(d, "the restore")) return;
  failpoint("auto/restore/planned");
  record(step_name(d.step), d.reason, d.command, "done: plan " + std::to_string(d.plan.sequence));
  write_command_spec(d, o);
  store_view_.reset();
}

// `d.plan`, signed, written over the plan this round read (replace-if-match): false, and the store
// read again next round, when another host's plan got there first.
bool Controller::replace_plan(const Decision& d, const std::string& what) {
  auto& conditional = *capability<ConditionalWrites>(*store_);
  const std::string text = keyring_.sign(kAutoPlanKey, cluster_plan_json(d.plan));
  if (conditional.write_if(kAutoPlanKey, text, store_view_ ? store_view_->plan_version : "")) return true;
  spdlog::info("auto: the plan changed while this host planned {}: reading it again", what);
  store_view_.reset();
  return false;
}

// The spec the restore command asks for, as the store's (seed's way: the signed copy, its next
// generation, first, then etcd-manager's file). Written after the plan and again, if it still
// differs, before the command is deleted: a controller killed between the plan and the spec
// leaves the spec to the host that finishes the restore.
void Controller::write_command_spec(const Decision& d, const Observation& o) {
  if (!d.new_spec) return;
  AutoSpec signed_spec = o.auto_spec;
  signed_spec.cluster_spec = *d.new_spec;
  signed_spec.generation = std::max(spec_generation_, o.auto_spec.generation) + 1;
  write_auto_spec(*store_, signed_spec, keyring_);
  spec_generation_ = signed_spec.generation;
  write_etcd_manager_cluster_spec(*store_, *d.new_spec);
  record("write-spec",
         "the restore command asks for " + std::to_string(d.new_spec->member_count) + " members of etcd " +
             d.new_spec->etcd_version,
         "etcdadm seed --store " + store_->url() + " --members " + std::to_string(d.new_spec->member_count) +
             " --version " + d.new_spec->etcd_version,
         "done");
}

std::string Controller::restore_planned_member(const ClusterPlan& plan, const Observation& seen) {
  LifecycleOptions o = options_.lifecycle;
  o.member.version = plan.etcd_version;
  o.release.version = plan.etcd_version;
  o.initial_cluster = plan.initial_cluster();
  o.initial_cluster_token = plan.cluster_token;
  // Fetched and verified whole (and the change log replayed) while this host's old member still
  // runs: a backup that is missing or damaged fails here and costs the running cluster nothing.
  BackupRecord backup = find_backup(*store_, catalog_, plan.backup);
  if (!plan.backup_db_sha256.empty()) {
    // The db its approver verified (or its planner read): a backup replaced since then is refused
    // by the fetch's digest check, whatever its metadata now says.
    if (!backup.db_sha256.empty() && backup.db_sha256 != plan.backup_db_sha256) {
      throw Error(ErrorKind::kCorrupt,
                  "backup " + backup.name + " records the db SHA-256 " + backup.db_sha256 + ", and plan " +
                      std::to_string(plan.sequence) + " restores " + plan.backup_db_sha256 +
                      ": the backup was replaced after the restore was approved or planned",
                  "inspect the store's writers; `etcdadm etcd-manager delete-command` cancels a queued restore");
    }
    backup.db_sha256 = plan.backup_db_sha256;
  }
  // Every host restores the same backup with the plan's bump, so the members agree on the revision.
  RestoreMethod method;
  method.kubernetes_bump = plan.kubernetes_revision_bump;
  // An auto-restore replays the change log to exactly the plan's revision on every host.
  PointInTime target;
  target.revision = plan.to_revision;
  // The planner chained the tagged segments only: every host replays exactly those.
  if (plan.purpose == "auto-restore") target.segment_accepted = [this](const auto& s) { return segment_accepted(s); };
  o.restore_snapshot = prefetched_backup_restorer(store_, backup, member_.data_dir, plan.etcd_version, method, target);
  stop_and_set_aside(set_aside_label(plan));
  failpoint("auto/restore/set-aside");
  // Until the restore is in the data dir this host's state names no plan: killed before that, the
  // next round restores again (over an empty data dir).
  AutoLocalState state = read_auto_local_state(member_.config_dir);
  write_auto_local_state(member_.config_dir, AutoLocalState{plan.cluster_token, false, 0, 0, state.plan_sequence});
  for (const auto& phase : controller_phases(init_phases())) {
    if (phase == "start") {
      // This host's old member is stopped now: the cluster the plan replaces must have lost its
      // leader before the restored one may start (start_stopped_member starts it once it has).
      Observation now = seen;
      now.plan = plan;
      now.local.etcd_running = false;
      if (std::string leader = replaced_cluster_leader(now); !leader.empty()) {
        return "restored, not started: the cluster the plan replaces still answers with a leader (" + leader + ")";
      }
    }
    run_init(o, phase);
    if (phase == "snapshot") {
      // Restored: from here on this host's data is the plan's, and the plan is never carried out
      // here again (a member started twice from a snapshot would rejoin with a rewound log).
      write_auto_local_state(member_.config_dir, AutoLocalState{plan.cluster_token, false, 0, 0, plan.sequence,
                                                                device_of_path(member_.data_dir)});
      failpoint("auto/restore/restored");
    }
  }
  return "started";
}

void Controller::set_aside_data(const ClusterPlan& plan) {
  stop_and_set_aside(set_aside_label(plan));
  AutoLocalState state;
  state.plan_sequence = plan.sequence;
  write_auto_local_state(member_.config_dir, state);
}

// The restored cluster has a leader: the queued command is done, and deleted.
void Controller::finish_restore(const Decision& d, const Observation& o) {
  write_command_spec(d, o);
  EtcdManagerCommand done;
  done.key = d.plan.command_key;
  remove_etcd_manager_command(*store_, done);
}

// An auto-restore restores what no person chose, so it takes only what the cluster's own
// controllers signed: the newest attested backup (an unattested newer one is named and passed
// over), and of its change log only the tagged segments, as far as they reach without a gap.
Observation::AutoRestoreCandidate Controller::auto_restore_candidate(int64_t now_unix, int64_t clock_skew_seconds) {
  Observation::AutoRestoreCandidate c;
  catalog_.sync(*store_);
  const RecordPolicy policy = record_policy();
  std::vector<std::string> passed_over;
  std::optional<BackupRecord> chosen;
  // Each look is one read of the store, every round of a total loss: a store of a person's (or a
  // plain sidecar's) backups is searched this deep, no deeper.
  constexpr size_t kBackupsLookedAt = 100;
  size_t looked_at = 0;
  const auto now = std::chrono::system_clock::now();
  for (const auto& b : catalog_.backups(store_->url())) {  // newest first
    // What is never `latest` (no data file, dated in the future: a store's garbage) costs no read.
    if (!b.revision || b.cluster_id.empty() || !why_not_latest(b, now).empty()) continue;
    if (++looked_at > kBackupsLookedAt) break;
    if (std::string why = backup_attestation_refusal(*store_, b, policy); !why.empty()) {
      passed_over.push_back(why);
      continue;
    }
    chosen = b;
    break;
  }
  auto passed = [&] {
    constexpr size_t kNamed = 3;
    std::string out;
    for (size_t i = 0; i < passed_over.size() && i < kNamed; ++i) out += (out.empty() ? "" : "; ") + passed_over[i];
    if (passed_over.size() > kNamed) out += "; and " + std::to_string(passed_over.size() - kNamed) + " more";
    return out;
  };
  if (!chosen) {
    c.problem = "the store holds no attested backup of a cluster among its " + std::to_string(kBackupsLookedAt) +
                " newest" + (passed_over.empty() ? std::string() : " (" + passed() + ")");
    return c;
  }
  const BackupRecord& b = *chosen;
  c.backup = b.name;
  c.backup_db_sha256 = b.db_sha256;
  c.backup_revision = *b.revision;
  c.passed_over = passed();
  std::vector<changelog::SegmentName> segments = changelog::list_segments(*store_, b.cluster_id);
  const size_t listed = segments.size();
  std::erase_if(segments, [this](const auto& s) { return !segment_accepted(s); });
  c.untagged_segments = static_cast<int64_t>(listed - segments.size());
  const changelog::LogChain chain = changelog::chain_from(segments, c.backup_revision);
  // The log is known complete until its last tagged segment's receipt: the heartbeat, which no
  // one signs, is not taken (a later one would only shrink the bump).
  int64_t known_micros = b.taken_at_micros;
  if (chain.reaches > c.backup_revision) {
    c.to_revision = chain.reaches;
    known_micros = chain.reaches_observed_ms * 1000;
    std::vector<LogRateSample> ends;
    for (const auto& s : chain.segments) ends.push_back({s.last_revision, s.last_observed_ms});
    c.revisions_per_second = log_write_rate(c.backup_revision, b.taken_at_micros, ends);
  }
  c.complete_until_unix = known_micros / 1000000;
  // The log's times are its writer's clock: a skew seen between the hosts widens the gap it is sized for.
  c.bump =
      sized_revision_bump(c.revisions_per_second, now_unix - c.complete_until_unix + std::llabs(clock_skew_seconds));
  return c;
}

}  // namespace etcdadm

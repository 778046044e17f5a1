// Restores (rule 3 and rules R1-R3 of controller/decide.cc): the command queue's restore planned
// once and carried out by every host, and the total loss, which waits for a person or, with the
// spec's autoRestore, restores the newest attested backup and its tagged change log.
#include <fmt/format.h>

#include <algorithm>

#include "common/text.h"
#include "controller/decide_concerns.h"
#include "restore/restore_method.h"

namespace etcdadm {

bool total_loss(const Observation& o) {
  // Fails closed: data that cannot be told (unavailable, a record that does not parse) may be intact.
  auto may_hold_data = [](DataState d) { return d == DataState::kMember || d == DataState::kUnavailable; };
  const bool intact_anywhere = may_hold_data(o.local.data) || !o.unreadable_host_records.empty() ||
                               std::any_of(o.hosts.begin(), o.hosts.end(), [&](const HostView& h) {
                                 return h.record.name != o.self && may_hold_data(h.record.data);
                               });
  return o.created_marker && !o.cluster.answered && !intact_anywhere;
}

bool hurried_round(const Observation& o) {
  if (o.pause || o.cluster.answered) return false;
  if (o.plan && o.plan->restores() && o.now_unix - o.plan->written_unix < kHurrySeconds) return true;
  return o.spec && o.created_marker && o.auto_spec.auto_restore &&
         o.unanswered_seconds < o.auto_spec.auto_restore_delay_seconds + kHurrySeconds;
}

namespace decide_parts {

namespace {

// A plan (kPlanRestore) that restores `backup` (the db whose SHA-256 is `db_sha256`) into a cluster
// of `spec`, on the candidates, one sequence above the plan read.
Decision restore_plan(const Observation& o, const Candidates& c, const EtcdManagerClusterSpec& spec,
                      const std::string& purpose, const std::string& backup, const std::string& db_sha256,
                      uint64_t bump, const std::string& token) {
  Decision d;
  d.step = Step::kPlanRestore;
  d.plan.sequence = (o.plan ? o.plan->sequence : 0) + 1;
  d.plan.purpose = purpose;
  d.plan.backup = backup;
  d.plan.backup_db_sha256 = db_sha256;
  d.plan.kubernetes_revision_bump = bump;
  d.plan.cluster_token = token;
  d.plan.etcd_version = spec.etcd_version;
  if (o.cluster.answered) d.plan.replaces_cluster_id = o.cluster.info.cluster_id;
  // The hosts of the running cluster's voters first, then those whose records say they hold a
  // member's data, then spares: each listed host stops its old member before it restores, so the
  // old cluster loses its quorum as the restored one gains its own.
  Candidates ordered = c;
  auto rank = [&](const HostRecord* h) {
    for (const auto& m : o.cluster.info.members) {
      if (!m.learner && std::find(m.peer_urls.begin(), m.peer_urls.end(), h->peer_url) != m.peer_urls.end()) return 0;
    }
    return h->data == DataState::kMember ? 1 : 2;
  };
  std::stable_sort(ordered.hosts.begin(), ordered.hosts.end(),
                   [&](const HostRecord* a, const HostRecord* b) { return rank(a) < rank(b); });
  plan_members(o, ordered, spec.member_count, d.plan);
  return d;
}

// The cluster the queued restore's command asks for: its spec, the store's where it leaves a field unset.
EtcdManagerClusterSpec command_spec(const Observation& o) {
  const EtcdManagerRestoreCommand& r = *o.restore_command->restore_backup;
  EtcdManagerClusterSpec into = o.spec.value_or(EtcdManagerClusterSpec{});
  if (r.cluster_spec.member_count > 0) into.member_count = r.cluster_spec.member_count;
  if (!r.cluster_spec.etcd_version.empty()) into.etcd_version = r.cluster_spec.etcd_version;
  return into;
}

// The queued restore's plan: the cluster its command asks for, restored from its backup on the live hosts.
Decision plan_restore(const Observation& o, const std::string& token) {
  const EtcdManagerCommand& cmd = *o.restore_command;
  const EtcdManagerRestoreCommand& r = *cmd.restore_backup;
  const EtcdManagerClusterSpec into = command_spec(o);
  Candidates c = live_candidates(o);
  if (auto wait = not_yet_planned(o, c, into.member_count, "restoring backup " + r.backup)) return *wait;
  Decision d = restore_plan(o, c, into, "restore", r.backup, o.restore_db_sha256, kKubernetesRevisionBump, token);
  d.plan.command_key = cmd.key;
  if (!(into == *o.spec)) d.new_spec = into;
  d.reason = "a restore of backup " + r.backup + " is queued (" + cmd.key + "): planning a cluster of " +
             names_of(d.plan.members) + " restored from it" +
             (o.cluster.answered ? ", replacing the running cluster (after a backup of it)" : "") + c.notes;
  d.command = "etcdadm init --from-backup " + r.backup + " --store " + o.store_url + " --initial-cluster " +
              d.plan.initial_cluster() + " --initial-cluster-token " + token + " (on each of " +
              names_of(d.plan.members) + ", their members stopped and data dirs emptied first)";
  return d;
}

// The queued restore while the quorum is lost: a survivor whose data reaches the backup's revision
// holds every write the backup does and those since, so it is the restore's source, as the newest
// source wins in `etcdadm recover` (a person who wants the older backup stops that member's etcd
// first: with no member answering, the backup is restored). nullopt: the backup is the source (no
// survivor answers, the backup is further along, or its revision is not recorded).
std::optional<Decision> restore_from_survivor(const Observation& o, const std::string& token) {
  const auto loss = quorum_loss(o);
  if (!loss || !o.restore_backup_revision || loss->survivors.front().revision < *o.restore_backup_revision) {
    return std::nullopt;
  }
  const QuorumLoss::Survivor& furthest = loss->survivors.front();
  const EtcdManagerCommand& cmd = *o.restore_command;
  const std::string why = "a restore of backup " + cmd.restore_backup->backup + " (revision " +
                          std::to_string(*o.restore_backup_revision) + ") is queued (" + cmd.key +
                          ") while the quorum is lost, and member " + furthest.member + " holds revision " +
                          std::to_string(furthest.revision) + ": its data is the newer source";
  const std::string instead = "etcdadm recover --store " + o.store_url + " on the host of member " + furthest.member +
                              " (etcdadm auto pause first), or, to restore the older backup instead, stop etcd on it";
  bool live = false;
  for (const auto& h : o.hosts) live = live || (h.record.name == furthest.host && h.live);
  if (!live) {
    return make(Step::kWait,
                why + ", and no live controller runs beside it (host " +
                    (furthest.host.empty() ? std::string("unknown") : furthest.host) + ")",
                instead);
  }
  if (furthest.host != o.self) return make(Step::kWait, why + ": host " + furthest.host + " plans its recovery");
  Decision d = quorum_recovery_plan(o, furthest, token);
  d.plan.command_key = cmd.key;
  const EtcdManagerClusterSpec into = command_spec(o);
  d.plan.etcd_version = into.etcd_version;
  if (!(into == *o.spec)) d.new_spec = into;
  d.reason = why + ": planning it as a cluster of one (its data dir set aside first), the other hosts to join it" +
             (into.member_count > 1 ? " as the spec's " + std::to_string(into.member_count) + " members" : "");
  d.command = instead;
  return d;
}

// What a person runs after a total loss: the backup alone, or with its change log to its end.
std::string manual_restore_commands(const Observation& o) {
  return "etcdadm etcd-manager restore-backup latest --store " + o.store_url +
         " (every host's controller restores the newest backup), or etcdadm seed --auto-restore on --store " +
         o.store_url + " (the newest attested backup and its change log to its end, on every host at once)";
}

// A total loss with the spec's autoRestore on: wait out its delay, then plan the restore of the
// newest attested backup and its tagged change log to the end the log reaches, on the live hosts, once.
Decision auto_restore(const Observation& o, const std::string& token) {
  const int64_t delay = o.auto_spec.auto_restore_delay_seconds;
  const std::string loss =
      "total loss: the store says a cluster was created, but no member answers and no host holds a member's data";
  if (o.plan && o.plan->purpose == "auto-restore" &&
      held_age(o.now_unix - o.plan->written_unix, o.plan_seen_seconds) < kAutoRestoreRetrySeconds) {
    return make(Step::kWait,
                loss + "; auto-restore plan " + std::to_string(o.plan->sequence) + " (backup " + o.plan->backup +
                    " to revision " + std::to_string(o.plan->to_revision) +
                    ") did not bring it back: no second one within " + std::to_string(kAutoRestoreRetrySeconds) +
                    " s of it (see the events)",
                manual_restore_commands(o));
  }
  if (o.total_loss_seconds < delay) {
    return make(Step::kWait,
                loss + " for " + std::to_string(o.total_loss_seconds) +
                    " s: auto-restore restores the newest attested backup and its "
                    "change log once it has lasted " +
                    std::to_string(delay) + " s, unless a member comes back",
                manual_restore_commands(o));
  }
  if (!o.auto_restore || !o.auto_restore->problem.empty()) {
    return make(Step::kWait,
                loss + "; auto-restore has nothing to restore: " +
                    (o.auto_restore ? o.auto_restore->problem : std::string("the store was not read yet")),
                manual_restore_commands(o));
  }
  const auto& a = *o.auto_restore;
  Candidates c = live_candidates(o);
  if (auto wait = not_yet_planned(o, c, o.spec->member_count, "restoring backup " + a.backup)) return *wait;
  Decision d = restore_plan(o, c, *o.spec, "auto-restore", a.backup, a.backup_db_sha256, a.bump, token);
  d.plan.to_revision = a.to_revision;
  const int64_t target = a.to_revision > 0 ? a.to_revision : a.backup_revision;
  d.reason = loss + " for " + std::to_string(o.total_loss_seconds) + " s (auto-restore after " + std::to_string(delay) +
             " s): restoring backup " + a.backup + " (revision " + std::to_string(a.backup_revision) + ")" +
             (a.to_revision > 0 ? " and its change log to its end, revision " + std::to_string(a.to_revision) : "") +
             " on " + names_of(d.plan.members) + "; a Kubernetes keyspace comes back at revision " +
             std::to_string(target + static_cast<int64_t>(a.bump)) + " (moved " + std::to_string(a.bump) +
             " past it: the log showed " + fmt::format("{:.1f}", a.revisions_per_second) +
             " revisions/s, and its writes since it was last known complete are unknown)" + c.notes +
             (a.passed_over.empty() ? "" : "; not restored: " + a.passed_over) +
             (a.untagged_segments > 0 ? "; " + std::to_string(a.untagged_segments) +
                                            " change log segments without this cluster's tag were not replayed"
                                      : "");
  d.command = "etcdadm init --from-backup " + a.backup + " --store " + o.store_url +
              (a.to_revision > 0 ? " --to-revision " + std::to_string(a.to_revision) : "") + " --initial-cluster " +
              d.plan.initial_cluster() + " --initial-cluster-token " + token + " --bump-revision " +
              std::to_string(a.bump) + " --mark-compacted (on each of " + names_of(d.plan.members) + ")";
  return d;
}

}  // namespace

std::optional<Decision> run_queue(const Observation& o, const std::string& token) {
  const ClusterPlan* restore = o.plan && o.plan->restores() ? &*o.plan : nullptr;
  // Planned as a restore of its backup, or as the recovery of a survivor further along.
  const bool planned = o.restore_command && o.plan && o.plan->command_key == o.restore_command->key;
  if (o.restore_command && !planned) {
    // A cluster with a leader plans through its leader's controller; without one, any host may:
    // the replace-if-match write lets one plan through.
    const bool led = o.cluster.answered && o.cluster.info.leader_id != 0;
    if (led && !is_acting(o)) {
      return make(Step::kIdle, "a restore of backup " + o.restore_command->restore_backup->backup +
                                   " is queued: the leader's controller plans it");
    }
    if (!led) {
      if (auto survivor = restore_from_survivor(o, token)) return survivor;
    }
    return plan_restore(o, token);
  }
  if (restore && o.local.plan_sequence < restore->sequence) {
    if (restore->member(o.self)) {
      if (restore->ca_sha256 != o.ca_sha256) {
        return make(Step::kWait,
                    "restore plan " + std::to_string(restore->sequence) + " lists this host, but for another CA",
                    "copy the cluster's ca.crt and ca.key into this host's certs dir");
      }
      Decision d = make(Step::kRestoreMember,
                        "restore plan " + std::to_string(restore->sequence) +
                            " lists this host: restoring its member from backup " + restore->backup + " (" +
                            names_of(restore->members) + ")" +
                            (o.local.data != DataState::kEmpty ? "; its old data is set aside, not deleted" : ""),
                        "etcdadm init --from-backup " + restore->backup + " --store " + o.store_url +
                            (restore->to_revision > 0 ? " --to-revision " + std::to_string(restore->to_revision) : "") +
                            " --initial-cluster " + restore->initial_cluster() + " --initial-cluster-token " +
                            restore->cluster_token + " --name " + o.self);
      d.plan = *restore;
      return d;
    }
    if (o.local.data != DataState::kEmpty || o.local.etcd_running) {
      Decision d = make(Step::kSetAsideData,
                        "restore plan " + std::to_string(restore->sequence) +
                            " replaces the cluster without this host: its old "
                            "member is stopped and its data set aside (a spare host now)",
                        "etcdadm reset --skip-remove-member");
      d.plan = *restore;
      return d;
    }
  }
  // The restored members carry the plan's token; a recovered survivor keeps its cluster's (unless
  // the change log was its source): the one host the plan lists finishes it.
  if (planned && o.local.plan_sequence == o.plan->sequence && o.local.data == DataState::kMember &&
      o.local.has_leader &&
      (restore ? o.local.cluster_token == restore->cluster_token : o.plan->member(o.self) != nullptr)) {
    Decision d =
        make(Step::kFinishRestore,
             (restore ? "the cluster restored from backup " + restore->backup
                      : "the cluster recovered from member " + id_hex(o.plan->recovers_member_id) + "'s data") +
                 " has a leader: the command is done",
             "etcdadm etcd-manager delete-command " + o.plan->command_key + " --store " + o.store_url);
    d.plan = *o.plan;
    // The planner writes the spec the command asks for after the plan; killed between the two, it
    // is written here, before the command (the only record of it) goes.
    if (const auto into = command_spec(o); o.spec && !(into == *o.spec)) d.new_spec = into;
    return d;
  }
  return std::nullopt;
}

Decision after_total_loss(const Observation& o, const std::string& token) {
  Decision d = o.auto_spec.auto_restore
                   ? auto_restore(o, token)
                   : make(Step::kWait,
                          "total loss: the store says a cluster was created (control/etcd-cluster-created), "
                          "but no member answers and no host holds a member's data; a new, empty cluster is "
                          "never created over it, and auto-restore is off",
                          manual_restore_commands(o));
  d.total_loss = d.step == Step::kWait;
  return d;
}

}  // namespace decide_parts
}  // namespace etcdadm

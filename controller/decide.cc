#include "controller/decide.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/text.h"
#include "common/timefmt.h"
#include "backup/schedule.h"
#include "etcdadm/maintenance/defrag.h"
#include "etcdadm/quorum.h"
#include "restore/restore_method.h"

namespace etcdadm {

const char* step_name(Step step) {
  switch (step) {
    case Step::kIdle: return "idle";
    case Step::kWait: return "wait";
    case Step::kStartLocalMember: return "start-member";
    case Step::kStartPlannedMember: return "create-member";
    case Step::kMarkCreated: return "mark-created";
    case Step::kPlanCluster: return "plan-cluster";
    case Step::kJoinAsAdded: return "join";
    case Step::kForgetMember: return "forget-member";
    case Step::kAddMember: return "add-member";
    case Step::kPromoteMember: return "promote-member";
    case Step::kRemoveMember: return "remove-member";
    case Step::kPlanRestore: return "plan-restore";
    case Step::kRestoreMember: return "restore-member";
    case Step::kSetAsideData: return "set-aside-data";
    case Step::kFinishRestore: return "finish-restore";
    case Step::kGiveVersionTurn: return "version-turn";
    case Step::kChangeVersion: return "change-version";
    case Step::kDefragment: return "defrag";
    case Step::kRecoverSpace: return "recover-space";
    case Step::kDisarmCorrupt: return "disarm-corrupt";
    case Step::kRenewCerts: return "renew-certs";
    case Step::kStartCaRotation: return "start-ca-rotation";
    case Step::kCaReissue: return "ca-reissue";
    case Step::kCaSwitch: return "ca-switch";
    case Step::kCompleteCaRotation: return "complete-ca-rotation";
  }
  return "?";
}

int quorum_of(int members) { return members / 2 + 1; }

namespace {
// "3.6.11" for "v3.6.11" and "3.6.11"; the text itself when it is no version (compared as is).
std::string version_text(const std::string& v) {
  auto parsed = EtcdVersion::parse(v);
  return parsed ? parsed->str() : v;
}
}  // namespace

bool voters_behind(const ClusterInfo& info, const std::string& version) {
  const std::string target = version_text(version);
  return std::any_of(info.members.begin(), info.members.end(),
                     [&](const MemberInfo& m) { return !m.learner && version_text(m.version) != target; });
}

bool total_loss(const Observation& o) {
  const bool intact_anywhere = o.local.data == "member" || std::any_of(o.hosts.begin(), o.hosts.end(), [&](const HostView& h) {
                                 return h.record.name != o.self && h.record.data == "member";
                               });
  return o.created_marker && !o.cluster.answered && !intact_anywhere;
}

bool hurried_round(const Observation& o) {
  if (o.pause || o.cluster.answered) return false;
  if (o.plan && o.plan->restores() && o.now_unix - o.plan->written_unix < kHurrySeconds) return true;
  return o.spec && o.created_marker && o.auto_spec.auto_restore &&
         o.unanswered_seconds < o.auto_spec.auto_restore_delay_seconds + kHurrySeconds;
}

bool local_member_removed(const Observation& o) {
  if (!o.cluster.answered || o.local.cluster_id == 0 || o.local.cluster_id != o.cluster.info.cluster_id) return false;
  const MemberInfo* listed = find_member_by_peer_url(o.cluster.info, o.self_peer_url);
  // Another member at this host's peer URL is a learner added for it again after its own member was
  // removed (the acting controller can do both between two of this host's rounds): the data here is
  // still the removed member's, which etcd refuses to start as the new one.
  return listed == nullptr || (o.local.member_id != 0 && listed->id != o.local.member_id);
}

bool is_acting(const Observation& o) {
  return o.cluster.answered && o.local.data == "member" && o.local.member_id != 0 &&
         o.cluster.info.leader_id == o.local.member_id;
}

namespace {

Decision make(Step step, std::string reason, std::string command = {}) {
  Decision d;
  d.step = step;
  d.reason = std::move(reason);
  d.command = std::move(command);
  return d;
}

std::string names_of(const std::vector<PlannedMember>& members) {
  std::string out;
  for (const auto& m : members) out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

// Hosts whose data says a cluster lives or lived on them (this one included).
std::vector<std::string> hosts_with_data(const Observation& o) {
  std::vector<std::string> out;
  if (o.local.data != "empty") out.push_back(o.self);
  for (const auto& h : o.hosts) {
    if (h.record.name != o.self && h.record.data != "empty") out.push_back(h.record.name + " (" + h.record.data + ")");
  }
  return out;
}

// The hosts a new plan may list: live, holding this host's CA, by name; and what was left out.
struct Candidates {
  std::vector<const HostRecord*> hosts;
  std::string notes;
};
Candidates live_candidates(const Observation& o) {
  Candidates c;
  std::vector<std::string> other_ca, stale;
  for (const auto& h : o.hosts) {
    if (!h.live) {
      stale.push_back(h.record.name);
    } else if (h.record.ca_sha256 != o.ca_sha256) {
      other_ca.push_back(h.record.name);
    } else {
      c.hosts.push_back(&h.record);
    }
  }
  std::sort(c.hosts.begin(), c.hosts.end(), [](const HostRecord* a, const HostRecord* b) { return a->name < b->name; });
  if (!other_ca.empty()) c.notes += "; hosts with another CA, never planned with this one: " + join_list(other_ca);
  if (!stale.empty()) c.notes += "; hosts not heard from lately: " + join_list(stale);
  return c;
}

// Why no plan of `n` members for `what` is written yet (too few live hosts, or the settle window
// still open for the missing ones), or nullopt when one is.
std::optional<Decision> not_yet_planned(const Observation& o, const Candidates& c, int n, const std::string& what) {
  const int q = quorum_of(n);
  const int have = static_cast<int>(c.hosts.size());
  if (have < q) {
    return make(Step::kWait, std::to_string(have) + " of the spec's " + std::to_string(n) + " hosts are registered and live; " +
                                 what + " needs at least " + std::to_string(q) +
                                 ": start `etcdadm auto` on the other control-plane hosts" + c.notes);
  }
  if (have < n && o.quorum_seen_seconds < o.auto_spec.bootstrap_settle_seconds) {
    return make(Step::kIdle, std::to_string(have) + " of " + std::to_string(n) + " hosts are live: waiting up to " +
                                 std::to_string(o.auto_spec.bootstrap_settle_seconds - o.quorum_seen_seconds) +
                                 " s more for the others before planning " + what + " with these" + c.notes);
  }
  return std::nullopt;
}

void plan_members(const Observation& o, const Candidates& c, int n, ClusterPlan& plan) {
  for (int i = 0; i < std::min(static_cast<int>(c.hosts.size()), n); ++i) {
    plan.members.push_back({c.hosts[i]->name, c.hosts[i]->peer_url, c.hosts[i]->client_url});
  }
  plan.ca_sha256 = o.ca_sha256;
  plan.written_by = o.self;
  plan.written_unix = o.now_unix;
}

// The next cluster's plan: the live hosts holding this host's CA, by name, at most the spec's
// count; or why there is none yet.
Decision plan_new_cluster(const Observation& o, const std::string& token) {
  const int n = o.spec->member_count;
  Candidates c = live_candidates(o);
  if (auto wait = not_yet_planned(o, c, n, "a new cluster")) return *wait;
  Decision d;
  d.step = Step::kPlanCluster;
  d.plan.sequence = 1;
  d.plan.purpose = "create";
  d.plan.cluster_token = token;
  d.plan.etcd_version = o.spec->etcd_version;
  plan_members(o, c, n, d.plan);
  d.reason = "no cluster was ever created from this store and " + std::to_string(c.hosts.size()) + " of " + std::to_string(n) +
             " hosts are live: planning a cluster of " + names_of(d.plan.members) + c.notes;
  d.command = "etcdadm init --initial-cluster " + d.plan.initial_cluster() + " --initial-cluster-token " + token +
              " (on each of " + names_of(d.plan.members) + ")";
  return d;
}

// A plan (kPlanRestore) that restores `backup` into a cluster of `spec`, on the candidates, one
// sequence above the plan read.
Decision restore_plan(const Observation& o, const Candidates& c, const EtcdManagerClusterSpec& spec, const std::string& purpose,
                      const std::string& backup, uint64_t bump, const std::string& token) {
  Decision d;
  d.step = Step::kPlanRestore;
  d.plan.sequence = (o.plan ? o.plan->sequence : 0) + 1;
  d.plan.purpose = purpose;
  d.plan.backup = backup;
  d.plan.kubernetes_revision_bump = bump;
  d.plan.cluster_token = token;
  d.plan.etcd_version = spec.etcd_version;
  plan_members(o, c, spec.member_count, d.plan);
  return d;
}

// The queued restore's plan: the cluster its command's spec asks for (the store's spec where the
// command leaves a field unset), restored from its backup on the live hosts.
Decision plan_restore(const Observation& o, const std::string& token) {
  const EtcdManagerCommand& cmd = *o.restore_command;
  const EtcdManagerRestoreCommand& r = *cmd.restore_backup;
  EtcdManagerClusterSpec into = *o.spec;
  if (r.cluster_spec.member_count > 0) into.member_count = r.cluster_spec.member_count;
  if (!r.cluster_spec.etcd_version.empty()) into.etcd_version = r.cluster_spec.etcd_version;
  Candidates c = live_candidates(o);
  if (auto wait = not_yet_planned(o, c, into.member_count, "restoring backup " + r.backup)) return *wait;
  Decision d = restore_plan(o, c, into, "restore", r.backup, kKubernetesRevisionBump, token);
  d.plan.command_key = cmd.key;
  if (!(into == *o.spec)) d.new_spec = into;
  d.reason = "a restore of backup " + r.backup + " is queued (" + cmd.key + "): planning a cluster of " +
             names_of(d.plan.members) + " restored from it" +
             (o.cluster.answered ? ", replacing the running cluster (after a backup of it)" : "") + c.notes;
  d.command = "etcdadm init --from-backup " + r.backup + " --store " + o.store_url + " --initial-cluster " +
              d.plan.initial_cluster() + " --initial-cluster-token " + token + " (on each of " + names_of(d.plan.members) +
              ", their members stopped and data dirs emptied first)";
  return d;
}

// What a person runs after a total loss: the backup alone, or with its change log to its end.
std::string manual_restore_commands(const Observation& o) {
  return "etcdadm etcd-manager restore-backup latest --store " + o.store_url +
         " (every host's controller restores the newest backup), or etcdadm seed --auto-restore on --store " + o.store_url +
         " (the newest backup and its change log to its end, on every host at once)";
}

// A total loss with the spec's autoRestore on: wait out its delay, then plan the restore of the
// newest backup and its change log to the end the log reaches, on the live hosts, once.
Decision auto_restore(const Observation& o, const std::string& token) {
  const int64_t delay = o.auto_spec.auto_restore_delay_seconds;
  const std::string loss = "total loss: the store says a cluster was created, but no member answers and no host holds a member's data";
  if (o.plan && o.plan->purpose == "auto-restore" && o.now_unix - o.plan->written_unix < kAutoRestoreRetrySeconds) {
    return make(Step::kWait,
                loss + "; auto-restore plan " + std::to_string(o.plan->sequence) + " (backup " + o.plan->backup +
                    " to revision " + std::to_string(o.plan->to_revision) + ") did not bring it back: no second one within " +
                    std::to_string(kAutoRestoreRetrySeconds) + " s of it (see the events)",
                manual_restore_commands(o));
  }
  if (o.total_loss_seconds < delay) {
    return make(Step::kWait,
                loss + " for " + std::to_string(o.total_loss_seconds) + " s: auto-restore restores the newest backup and its "
                    "change log once it has lasted " + std::to_string(delay) + " s, unless a member comes back",
                manual_restore_commands(o));
  }
  if (!o.auto_restore || !o.auto_restore->problem.empty()) {
    return make(Step::kWait, loss + "; auto-restore has nothing to restore: " +
                                 (o.auto_restore ? o.auto_restore->problem : std::string("the store was not read yet")),
                manual_restore_commands(o));
  }
  const auto& a = *o.auto_restore;
  Candidates c = live_candidates(o);
  if (auto wait = not_yet_planned(o, c, o.spec->member_count, "restoring backup " + a.backup)) return *wait;
  Decision d = restore_plan(o, c, *o.spec, "auto-restore", a.backup, a.bump, token);
  d.plan.to_revision = a.to_revision;
  const int64_t target = a.to_revision > 0 ? a.to_revision : a.backup_revision;
  d.reason = loss + " for " + std::to_string(o.total_loss_seconds) + " s (auto-restore after " + std::to_string(delay) +
             " s): restoring backup " + a.backup + " (revision " + std::to_string(a.backup_revision) + ")" +
             (a.to_revision > 0 ? " and its change log to its end, revision " + std::to_string(a.to_revision) : "") +
             " on " + names_of(d.plan.members) + "; a Kubernetes keyspace comes back at revision " +
             std::to_string(target + static_cast<int64_t>(a.bump)) + " (moved " + std::to_string(a.bump) +
             " past it: the log showed " + fmt::format("{:.1f}", a.revisions_per_second) +
             " revisions/s, and its writes since it was last known complete are unknown)" + c.notes;
  d.command = "etcdadm init --from-backup " + a.backup + " --store " + o.store_url +
              (a.to_revision > 0 ? " --to-revision " + std::to_string(a.to_revision) : "") + " --initial-cluster " +
              d.plan.initial_cluster() + " --initial-cluster-token " + token + " --bump-revision " + std::to_string(a.bump) +
              " --mark-compacted (on each of " + names_of(d.plan.members) + ")";
  return d;
}

// The command queue (rules R1-R3 in decide.h), or nullopt when it asks nothing of this host.
std::optional<Decision> run_queue(const Observation& o, const std::string& token) {
  const ClusterPlan* restore = o.plan && o.plan->restores() ? &*o.plan : nullptr;
  const bool planned = o.restore_command && restore && restore->command_key == o.restore_command->key;
  if (o.restore_command && !planned) {
    // A cluster with a leader plans through its leader's controller; without one, any host may:
    // the replace-if-match write lets one plan through.
    const bool led = o.cluster.answered && o.cluster.info.leader_id != 0;
    if (led && !is_acting(o)) {
      return make(Step::kIdle, "a restore of backup " + o.restore_command->restore_backup->backup +
                                   " is queued: the leader's controller plans it");
    }
    return plan_restore(o, token);
  }
  if (restore && o.local.plan_sequence < restore->sequence) {
    if (restore->member(o.self)) {
      if (restore->ca_sha256 != o.ca_sha256) {
        return make(Step::kWait, "restore plan " + std::to_string(restore->sequence) + " lists this host, but for another CA",
                    "copy the cluster's ca.crt and ca.key into this host's certs dir");
      }
      Decision d = make(Step::kRestoreMember,
                        "restore plan " + std::to_string(restore->sequence) + " lists this host: restoring its member from backup " +
                            restore->backup + " (" + names_of(restore->members) + ")" +
                            (o.local.data != "empty" ? "; its old data is set aside, not deleted" : ""),
                        "etcdadm init --from-backup " + restore->backup + " --store " + o.store_url +
                            (restore->to_revision > 0 ? " --to-revision " + std::to_string(restore->to_revision) : "") +
                            " --initial-cluster " + restore->initial_cluster() + " --initial-cluster-token " +
                            restore->cluster_token + " --name " + o.self);
      d.plan = *restore;
      return d;
    }
    if (o.local.data != "empty" || o.local.etcd_running) {
      Decision d = make(Step::kSetAsideData,
                        "restore plan " + std::to_string(restore->sequence) + " replaces the cluster without this host: its old "
                            "member is stopped and its data set aside (a spare host now)",
                        "etcdadm reset --skip-remove-member");
      d.plan = *restore;
      return d;
    }
  }
  if (planned && o.local.plan_sequence == restore->sequence && o.local.data == "member" && o.local.has_leader &&
      o.local.cluster_token == restore->cluster_token) {
    Decision d = make(Step::kFinishRestore,
                      "the cluster restored from backup " + restore->backup + " has a leader: the command is done",
                      "etcdadm etcd-manager delete-command " + restore->command_key + " --store " + o.store_url);
    d.plan = *restore;
    return d;
  }
  return std::nullopt;
}

}  // namespace

const HostView* host_refusing_member(const Observation& o, uint64_t member_id) {
  for (const auto& h : o.hosts) {
    if (h.live && member_id != 0 && h.record.member_id == member_id && h.record.etcd_refused == kEtcdRefusedInconsistent) return &h;
  }
  return nullptr;
}

namespace {

const MemberInfo* healthy_member_with_client_url(const ClusterInfo& info) {
  for (const auto& m : info.members) {
    if (member_healthy(m) && !m.client_urls.empty() && !m.learner) return &m;
  }
  return nullptr;
}


// The rolling version change, once every voter is healthy and the count is the spec's: one turn
// at a time (VersionTurn), the next only when the last turn's member runs its version and is
// healthy; nullopt when every voter runs the spec's version.
std::optional<Decision> change_versions(const Observation& o) {
  const ClusterInfo& info = o.cluster.info;
  const std::string target = version_text(o.spec->etcd_version);
  if (!voters_behind(info, target)) return std::nullopt;
  if (o.version_turn) {
    const VersionTurn& t = *o.version_turn;
    const MemberInfo* holder = nullptr;
    for (const auto& m : info.members) {
      if (m.id == t.member_id) holder = &m;
    }
    if (holder != nullptr && (version_text(holder->version) != version_text(t.to) || !member_healthy(*holder))) {
      return make(Step::kIdle, "version change: turn " + std::to_string(t.sequence) + ", member " + member_label(*holder) + " on " +
                                   t.host + " from " + t.from + " to " + t.to +
                                   "; the next turn once it runs " + t.to + " and is healthy");
    }
  }
  if (!o.version_plan) {
    return make(Step::kWait, "members run another etcd version than the spec's " + target +
                                 ", but the cluster's versions could not be surveyed");
  }
  const UpgradePlan& plan = *o.version_plan;
  if (!plan.allowed) {
    std::string supported;
    for (const auto& e : plan.members) {
      if (!e.step.allowed && !e.step.supported_path.empty() && supported.find(e.step.supported_path) == std::string::npos) {
        supported += (supported.empty() ? "" : "; ") + e.step.supported_path;
      }
    }
    return make(Step::kWait, "the spec asks for etcd " + target + ", a change etcd does not allow from here: " +
                                 join_list(plan.problems) + "; nothing was stopped",
                (supported.empty() ? std::string() : supported + "; ") + "or put the spec back: etcdadm seed --store " +
                    o.store_url + " --version <the version the members run>");
  }
  // plan_upgrade's order: members done first, then the followers by name, the leader last.
  const UpgradePlanEntry* next = nullptr;
  for (const auto& e : plan.members) {
    if (next == nullptr && e.step.kind != VersionStepKind::kSame && !e.member.learner) next = &e;
  }
  if (next == nullptr) return std::nullopt;  // surveyed just as the last member finished
  const HostRecord* host = nullptr;
  for (const auto& h : o.hosts) {
    if (h.record.data == "member" && (h.record.member_id == next->member.id || h.record.peer_url == (next->member.peer_urls.empty() ? "" : next->member.peer_urls[0]))) {
      host = &h.record;
    }
  }
  const std::string command = "etcdadm upgrade apply --version " + target + " --store " + o.store_url;
  if (host == nullptr) {
    return make(Step::kWait, "member " + member_label(next->member) + " runs etcd " + next->member.version + ", the spec " + target +
                                 ", and no registered host runs it: change it on its host",
                command + " (on the host of " + member_label(next->member) + ")");
  }
  Decision d = make(Step::kGiveVersionTurn,
                    "the spec asks for etcd " + target + " (" + version_step_name(next->step.kind) + "): member " +
                        member_label(next->member) + " on " + host->name + " goes next" +
                        (next->member.leader ? ", the leader's, last" : ", followers first, the leader's last"),
                    command + " (on " + host->name + ")");
  d.turn.sequence = (o.version_turn ? o.version_turn->sequence : 0) + 1;
  d.turn.host = host->name;
  d.turn.member_id = next->member.id;
  d.turn.from = version_text(next->member.version);
  d.turn.to = target;
  d.turn.written_by = o.self;
  d.turn.written_unix = o.now_unix;
  return d;
}

}  // namespace

std::optional<std::string> space_recovery_held(const MaintenanceRecord& record, const AutoSpec& spec, int64_t now_unix) {
  const auto& last = record.last_space_recovery;
  if (!last || last->disarmed || last->keep_revisions != spec.nospace_keep_revisions ||
      now_unix - last->unix >= kSpaceRetrySeconds) {
    return std::nullopt;
  }
  // Absolute times: a wait's reason must stay the same from round to round (one event, not one a round).
  return "the recovery at " + format_rfc3339_seconds(SystemTime(std::chrono::seconds(last->unix))) + " (by " + last->host +
         ") could not get under the quota: " + last->note + "; tried again at " +
         format_rfc3339_seconds(SystemTime(std::chrono::seconds(last->unix + kSpaceRetrySeconds))) +
         ", or at once with another --nospace-keep-revisions";
}

namespace {

// The hosts of the cluster's members, by member (nullptr where no host record names its peer URL).
std::vector<std::pair<const MemberInfo*, const HostRecord*>> member_hosts(const Observation& o) {
  std::vector<std::pair<const MemberInfo*, const HostRecord*>> out;
  for (const auto& m : o.cluster.info.members) {
    const HostRecord* host = nullptr;
    for (const auto& h : o.hosts) {
      if (std::find(m.peer_urls.begin(), m.peer_urls.end(), h.record.peer_url) != m.peer_urls.end()) host = &h.record;
    }
    out.emplace_back(&m, host);
  }
  return out;
}

// Whose part of rotation `r` is not done yet: "<member> (<what>)" for every member whose host has not
// reached `step` ("reissued" counts "switched" too); empty when every one has.
std::vector<std::string> rotation_behind(const Observation& o, const CaRotationRecord& r, const std::string& step) {
  std::vector<std::string> behind;
  for (const auto& [m, h] : member_hosts(o)) {
    const std::string label = m->name.empty() ? id_hex(m->id) : m->name;
    if (h == nullptr) {
      behind.push_back(label + " (no host record: not run by etcdadm auto)");
      continue;
    }
    const bool self = h->name == o.self;
    const std::string at = self ? ca_rotation_step(o.ca_rotation_state) : (h->ca_rotation_id == r.id ? h->ca_rotation_step : "");
    const bool done = at == step || (step == "reissued" && at == "switched");
    if (!done) behind.push_back(label + " (" + (at.empty() ? "not started" : at) + ")");
  }
  return behind;
}

// This host's part of a CA rotation; nullopt when it has none now (or waits for other hosts, which
// does not hold back the rules after it: a member that is down must still be replaceable).
std::optional<Decision> rotate_own_ca(const Observation& o) {
  if (!o.ca_rotation || o.ca_rotation_state == CaRotationState::kOtherCa || o.ca_rotation_state == CaRotationState::kSwitched) {
    return std::nullopt;
  }
  const CaRotationRecord& r = *o.ca_rotation;
  if (!o.ca_rotation_problem.empty()) {
    return make(Step::kWait, "CA rotation " + r.id + " (" + r.started_by + ") cannot be carried out here: " + o.ca_rotation_problem,
                "etcdadm auto status --store " + o.store_url + " (delete " + kAutoCaRotationKey + " if nobody started it)");
  }
  const std::string command = "etcdadm auto rotate-ca --store " + o.store_url + " (started it; the hosts carry it out)";
  if (o.ca_rotation_state == CaRotationState::kDue) {
    return make(Step::kCaReissue, "CA rotation " + r.id + ": re-issuing this host's certificates by the new CA, each served "
                                  "with its cross certificate (peers and clients that trust only the current CA still verify them; no restart)",
                command);
  }
  if (o.ca_rotation_state == CaRotationState::kSwitchRestart) {
    return make(Step::kCaSwitch, "CA rotation " + r.id + ": this host's switch to the new CA stopped before its etcd restarted on it: finishing it", command);
  }
  // kReissued: the switch, once every member's host re-issued and every member is healthy.
  if (!rotation_behind(o, r, "reissued").empty()) return std::nullopt;
  if (o.local.data == "member") {
    for (const auto& m : o.cluster.info.members) {
      if (!member_healthy(m)) return std::nullopt;
    }
  }
  return make(Step::kCaSwitch,
              "CA rotation " + r.id + ": every member's certificates are the new CA's: this host takes the new CA as its own and " +
                  (o.local.data == "member" ? "restarts its etcd on it (etcd reads its trusted CAs only at start)" : "has no etcd to restart"),
              command);
}

// The acting controller's part of a CA rotation: marking it completed, or starting one the spec's
// window asks for; nullopt when neither is due.
std::optional<Decision> rotate_cluster_ca(const Observation& o) {
  if (o.ca_rotation && o.ca_rotation->completed_unix == 0) {
    const auto& r = *o.ca_rotation;
    if (!rotation_behind(o, r, "switched").empty()) return std::nullopt;
    Decision d = make(Step::kCompleteCaRotation, "CA rotation " + r.id + ": every member's host runs on the new CA: marking it completed",
                      "etcdadm auto status --store " + o.store_url);
    return d;
  }
  const int64_t window = o.auto_spec.ca_rotate_before_seconds;
  if (window == 0 || o.local.ca_expires_unix == 0 || o.local.ca_expires_unix - o.now_unix >= window) return std::nullopt;
  for (const auto& [m, h] : member_hosts(o)) {
    if (h == nullptr || h->ca_sha256 != o.ca_sha256 || !member_healthy(*m)) return std::nullopt;
  }
  const std::string when = format_rfc3339_seconds(SystemTime(std::chrono::seconds(o.local.ca_expires_unix)));
  return make(Step::kStartCaRotation,
              "the cluster CA expires " + when + ", within the spec's " + std::to_string(window / 3600) +
                  " h: starting its rotation (a new CA, cross-signed by the current one; every host re-issues, then switches one at a time)",
              "etcdadm auto rotate-ca --store " + o.store_url);
}

// The members' maintenance, once the cluster is as the spec says: the members due a defrag (by the
// threshold, or by the schedule), defragmented in plan_defrag's order; nullopt when none is due.
std::optional<Decision> maintain(const Observation& o) {
  const AutoSpec& spec = o.auto_spec;
  std::optional<Schedule> schedule;
  if (!spec.defrag_schedule.empty()) schedule = Schedule::parse(spec.defrag_schedule);
  const SystemTime now = SystemTime(std::chrono::seconds(o.now_unix));
  std::vector<std::string> due;
  std::map<uint64_t, std::string> why;
  for (const auto& m : o.cluster.info.members) {
    if (!m.reachable) continue;
    const int64_t free = std::max<int64_t>(0, m.db_size - m.db_size_in_use);
    const bool by_threshold = spec.defrag_free_percent > 0 && m.db_size > 0 &&
                              free * 100 >= m.db_size * spec.defrag_free_percent && free >= spec.defrag_min_free_bytes;
    auto last = o.maintenance.defrags.find(m.id);
    const int64_t last_unix = last == o.maintenance.defrags.end() ? 0 : last->second.unix;
    const bool by_schedule = schedule && schedule->next_after(SystemTime(std::chrono::seconds(last_unix))) <= now;
    if (!by_threshold && !by_schedule) continue;
    due.push_back(id_hex(m.id));
    why[m.id] = by_threshold ? std::to_string(free * 100 / m.db_size) + "% of " + human_bytes(m.db_size) + " free"
                             : "due on the schedule " + spec.defrag_schedule +
                                   (last_unix == 0 ? " (never defragmented)" : " (last " + format_rfc3339_seconds(SystemTime(std::chrono::seconds(last_unix))) + ")");
  }
  if (due.empty()) return std::nullopt;
  const DefragPlan plan = plan_defrag(o.cluster.info, alarms_in_status(o.cluster.info), DefragRule{}, due);
  std::string command = "etcdadm defrag";
  for (const auto& id : due) command += " --member " + id;
  command += " --store " + o.store_url;
  if (!plan.problems.empty()) {
    return make(Step::kWait, "members are due a defrag, but not now: " + join_list(plan.problems), command);
  }
  std::string reason;
  Decision d = make(Step::kDefragment, "", command);
  for (const auto& e : plan.members) {
    if (!e.due) continue;
    d.members.push_back(e.member.id);
    reason += (reason.empty() ? "" : "; ") + member_label(e.member) + ": " + why[e.member.id];
  }
  d.reason = "defragmenting one member at a time, the leader last (" + reason + ")";
  return d;
}

// A voter etcd refused to start because its initial corruption check found the member's data
// differs from a peer's. etcd does not say which side is damaged (a member refuses beside one
// damaged peer too), so the other voters' HashKV decide: when they all agree and are a majority of
// the voters, the refusing member is the one that differs, and it is replaced like a corrupt one;
// otherwise nothing is. `unhealthy`: the unhealthy voters, all refusing (else nullopt: the replace
// rule's grace applies).
std::optional<Decision> act_on_refused_members(const Observation& o, const std::vector<const MemberInfo*>& unhealthy) {
  if (unhealthy.empty()) return std::nullopt;
  for (const auto* m : unhealthy) {
    if (host_refusing_member(o, m->id) == nullptr) return std::nullopt;
  }
  const ClusterInfo& info = o.cluster.info;
  const MemberInfo& m = *unhealthy.front();
  const HostView& host = *host_refusing_member(o, m.id);
  const std::string what = "etcd refused to start member " + member_label(m) + " on " + host.record.name +
                           " (its initial corruption check found the member's data differs from a peer's)";
  const std::string by_hand = "etcdadm hashkv (on a healthy member's host); etcd's log on " + host.record.name;
  if (!o.hashes) return make(Step::kWait, what + ": comparing the other voters' HashKV first", by_hand);
  const HashVerdict& v = o.hashes->verdict;
  if (v.kind == HashVerdict::Kind::kIncomplete) return make(Step::kWait, what + "; " + v.explanation, by_hand);
  if (v.kind != HashVerdict::Kind::kAgree) {
    return make(Step::kWait, what + ", but the other voters do not agree either (" + v.explanation +
                                 "): which data is right cannot be told, and nothing is replaced",
                "etcdadm hashkv; restore the cluster from a verified backup (etcdadm etcd-manager restore-backup NAME --store " +
                    o.store_url + ")");
  }
  int voters = 0;
  for (const auto& mi : info.members) voters += mi.learner ? 0 : 1;
  const int agreeing = static_cast<int>(o.hashes->survey.members.size());
  if (agreeing < quorum_of(voters)) {
    return make(Step::kWait, what + "; the " + std::to_string(agreeing) + " voters that agree are no majority of " +
                                 std::to_string(voters) + ": nothing is replaced",
                by_hand);
  }
  QuorumCheck q = check_remove(info, m.id);
  if (!q.safe) return make(Step::kWait, what + ", but removing it would cost quorum: " + q.explanation, by_hand);
  CorruptMember record;
  record.unix = o.now_unix;
  record.host = o.self;
  record.revision = o.hashes->survey.revision;
  record.majority_hash = v.majority_hash;
  record.refused_to_start = true;
  Decision d = make(Step::kRemoveMember,
                    "member " + member_label(m) + " is corrupt: " + what + ", and " + v.explanation +
                        ". Removing it to be replaced from the healthy members (" + q.explanation + "); its host keeps its data aside",
                    "etcdadm member remove " + (m.name.empty() ? id_hex(m.id) : m.name) + " --endpoints " + o.self_client_url +
                        "; on its host: move the data dir aside, then etcdadm join " + o.self_client_url + " --name " + m.name);
  d.member_id = m.id;
  d.corrupt = record;
  return d;
}

// Corrupt members (every voter healthy): nullopt when there is nothing to do about corruption.
std::optional<Decision> act_on_corruption(const Observation& o) {
  const ClusterInfo& info = o.cluster.info;
  const auto alarms = alarms_in_status(info);
  std::vector<uint64_t> corrupt_alarms;
  for (const auto& a : alarms) {
    if (a.alarm == "CORRUPT") corrupt_alarms.push_back(a.member_id);
  }
  const std::string by_hand = "etcdadm hashkv; etcdadm alarm list (docs/operations.md, \"Runbook: a corrupt member\")";
  if (!o.hashes) {
    if (corrupt_alarms.empty()) return std::nullopt;
    return make(Step::kWait, "etcd raised " + alarms_text(alarms) + ": comparing the voters' HashKV before anything else", by_hand);
  }
  const HashVerdict& v = o.hashes->verdict;
  switch (v.kind) {
    case HashVerdict::Kind::kMinorityDiffers: {
      const MemberInfo* m = nullptr;
      for (const auto& mi : info.members) {
        if (mi.id == v.differing.front()) m = &mi;
      }
      if (m == nullptr) return make(Step::kWait, v.explanation + ": the member is no longer listed", by_hand);
      QuorumCheck q = check_remove(info, m->id);
      if (!q.safe) {
        return make(Step::kWait, "member " + member_label(*m) + " is corrupt (" + v.explanation +
                                     "), but removing it would cost quorum: " + q.explanation,
                    by_hand);
      }
      CorruptMember record;
      record.unix = o.now_unix;
      record.host = o.self;
      record.revision = o.hashes->survey.revision;
      record.majority_hash = v.majority_hash;
      for (const auto& h : o.hashes->survey.members) {
        if (h.member_id == m->id) record.hash = h.hash;
      }
      Decision d = make(Step::kRemoveMember,
                        "member " + member_label(*m) + " is corrupt: " + v.explanation +
                            ". Removing it to be replaced from the healthy members (" + q.explanation +
                            "); its host keeps its data aside",
                        "etcdadm member remove " + (m->name.empty() ? id_hex(m->id) : m->name) + " --endpoints " +
                            o.self_client_url + "; on its host: move the data dir aside, then etcdadm join " +
                            o.self_client_url + " --name " + m->name);
      d.member_id = m->id;
      d.corrupt = record;
      return d;
    }
    case HashVerdict::Kind::kNoMajority:
      return make(Step::kWait, v.explanation + ": nothing is replaced; a person decides which data is right",
                  "etcdadm hashkv; restore the cluster from a verified backup (etcdadm etcd-manager restore-backup NAME --store " +
                      o.store_url + ")");
    case HashVerdict::Kind::kAgree: {
      if (corrupt_alarms.empty()) return std::nullopt;
      // A member this cluster's controllers found corrupt lately is gone from it, and no alarm was
      // disarmed for it yet.
      bool replaced = false;
      for (const auto& [id, c] : o.maintenance.corrupt) {
        replaced = replaced || (!c.alarm_settled && o.now_unix - c.unix <= kCorruptDisarmWindowSeconds &&
                                std::none_of(info.members.begin(), info.members.end(),
                                             [&, id = id](const MemberInfo& mi) { return mi.id == id; }));
      }
      if (!replaced) {
        return make(Step::kWait,
                    "etcd raised " + alarms_text(alarms) + ", but " + v.explanation +
                        ": no member was found corrupt and replaced in the last hour, so the alarm stays for a person to "
                        "look at",
                    by_hand + "; etcdctl alarm disarm once the cause is known");
      }
      Decision d = make(Step::kDisarmCorrupt,
                        "etcd raised " + alarms_text(alarms) + "; the corrupt member was replaced and " + v.explanation +
                            ": disarming the alarm so that the cluster takes writes again",
                        "etcdctl alarm disarm");
      d.members = corrupt_alarms;
      return d;
    }
    case HashVerdict::Kind::kIncomplete:
      break;
  }
  if (corrupt_alarms.empty()) return std::nullopt;
  return make(Step::kWait, "etcd raised " + alarms_text(alarms) + "; " + v.explanation, by_hand);
}

// What the controller next to the Raft leader does: one membership change at a time, each only
// when the cluster is healthy enough for it; then the version.
Decision act_on_cluster(const Observation& o) {
  const ClusterInfo& info = o.cluster.info;
  const int n = o.spec->member_count;
  std::vector<const MemberInfo*> voters, learners, unhealthy;
  for (const auto& m : info.members) {
    (m.learner ? learners : voters).push_back(&m);
    if (!m.learner && !member_healthy(m)) unhealthy.push_back(&m);
  }
  const std::string endpoint = o.self_client_url;

  // A learner: its host starts it, then it is promoted (etcd refuses until it has caught up).
  for (const auto* l : learners) {
    if (l->name.empty()) {
      return make(Step::kWait, "learner " + id_hex(l->id) + " (" + (l->peer_urls.empty() ? "?" : l->peer_urls[0]) +
                                   ") was added; waiting for its host to start it");
    }
    Decision d = make(Step::kPromoteMember, "learner " + member_label(*l) + " is started: promoting it once it has caught up",
                      "etcdctl member promote " + id_hex(l->id));
    d.member_id = l->id;
    return d;
  }

  if (auto refused = act_on_refused_members(o, unhealthy)) return *refused;

  // An unhealthy voter: removed at once when the cluster has more voters than the spec (the
  // unhealthy go first), else after the grace period; never when that would cost quorum.
  const bool too_many = static_cast<int>(voters.size()) > n;
  for (const auto* m : unhealthy) {
    auto it = o.unhealthy_seconds.find(m->id);
    const int64_t secs = it == o.unhealthy_seconds.end() ? 0 : it->second;
    if (!too_many && secs < o.auto_spec.replace_after_seconds) continue;
    QuorumCheck q = check_remove(info, m->id);
    if (!q.safe) {
      return make(Step::kWait, "member " + member_label(*m) + " has been unhealthy for " + std::to_string(secs) +
                                   " s, but removing it would cost quorum: " + q.explanation,
                  "bring it back, or restore the cluster from a backup (docs/operations.md)");
    }
    Decision d = make(Step::kRemoveMember,
                      "member " + member_label(*m) + (too_many ? " is unhealthy and the cluster has more voters than the spec's " + std::to_string(n)
                                                              : " has been unhealthy for " + std::to_string(secs) + " s (replaced after " +
                                                                    std::to_string(o.auto_spec.replace_after_seconds) + " s)") +
                          ": removing it (" + q.explanation + ")",
                      "etcdadm member remove " + (m->name.empty() ? id_hex(m->id) : m->name) + " --endpoints " + endpoint);
    d.member_id = m->id;
    return d;
  }
  if (!unhealthy.empty()) {
    std::string names;
    for (const auto* m : unhealthy) {
      auto it = o.unhealthy_seconds.find(m->id);
      names += (names.empty() ? "" : ", ") + member_label(*m) + " for " + std::to_string(it == o.unhealthy_seconds.end() ? 0 : it->second) + " s";
    }
    return make(Step::kWait, "unhealthy: " + names + "; a member is replaced after " +
                                 std::to_string(o.auto_spec.replace_after_seconds) + " s, and nothing else changes meanwhile");
  }

  if (auto corruption = act_on_corruption(o)) return *corruption;

  // etcd's NOSPACE alarm: the cluster takes no writes. Recovered before anything else changes.
  const auto alarms = alarms_in_status(info);
  if (std::any_of(alarms.begin(), alarms.end(), [](const MemberAlarm& a) { return a.alarm == "NOSPACE"; })) {
    // (A CORRUPT alarm beside it never gets here: act_on_corruption waits or acts on it first.)
    const std::string command =
        "etcdadm alarm recover --keep-revisions " + std::to_string(o.auto_spec.nospace_keep_revisions) + " --store " + o.store_url;
    if (auto held = space_recovery_held(o.maintenance, o.auto_spec, o.now_unix)) {
      return make(Step::kWait, "etcd raised " + alarms_text(alarms) + "; " + *held, command);
    }
    return make(Step::kRecoverSpace,
                "etcd raised " + alarms_text(alarms) + ": the cluster takes no writes. Recovering: a backup, compaction "
                "keeping " + std::to_string(o.auto_spec.nospace_keep_revisions) +
                    " revisions, every member defragmented (the leader last), the alarm disarmed once every member is under " +
                    std::to_string(o.auto_spec.nospace_disarm_below_percent) + "% of its quota",
                command);
  }

  if (static_cast<int>(voters.size()) < n) {
    std::vector<const HostRecord*> spares;
    for (const auto& h : o.hosts) {
      if (h.live && h.record.data == "empty" && h.record.ca_sha256 == o.ca_sha256 &&
          find_member_by_peer_url(info, h.record.peer_url) == nullptr) {
        spares.push_back(&h.record);
      }
    }
    if (spares.empty()) {
      return make(Step::kWait, "the cluster has " + std::to_string(voters.size()) + " of the spec's " + std::to_string(n) +
                                   " members and no live spare host: start `etcdadm auto` on another control-plane host");
    }
    std::sort(spares.begin(), spares.end(), [](const HostRecord* a, const HostRecord* b) { return a->name < b->name; });
    Decision d = make(Step::kAddMember,
                      "the cluster has " + std::to_string(voters.size()) + " of the spec's " + std::to_string(n) +
                          " members: adding " + spares[0]->name + " as a learner",
                      "etcdadm join " + endpoint + " --name " + spares[0]->name + " (on " + spares[0]->name + ")");
    d.host = *spares[0];
    return d;
  }
  if (static_cast<int>(voters.size()) > n) {
    // The highest name that is not the leader: the leader is never removed first.
    const MemberInfo* victim = nullptr;
    for (const auto* m : voters) {
      if (m->id != info.leader_id && (victim == nullptr || m->name > victim->name)) victim = m;
    }
    if (victim != nullptr) {
      QuorumCheck q = check_remove(info, victim->id);
      if (!q.safe) return make(Step::kWait, "one member too many, but removing " + member_label(*victim) + " would cost quorum: " + q.explanation);
      Decision d = make(Step::kRemoveMember,
                        "the cluster has " + std::to_string(voters.size()) + " members, the spec " + std::to_string(n) +
                            ": removing " + member_label(*victim) + " (" + q.explanation + ")",
                        "etcdadm reset (on " + victim->name + ")");
      d.member_id = victim->id;
      return d;
    }
  }
  if (auto version = change_versions(o)) return *version;
  if (auto maintenance = maintain(o)) return *maintenance;
  if (auto rotation = rotate_cluster_ca(o)) return *rotation;
  Decision d = make(Step::kIdle, "member " + id_hex(o.local.member_id) + " (the leader's controller, acting) of a cluster of " +
                                     std::to_string(voters.size()) + " healthy voters, as the spec asks");
  d.settled = true;
  return d;
}

// This host's member certificates, due within the spec's window: renewed with every member
// healthy (the maintenance lease makes it one host at a time); nullopt when not due.
std::optional<Decision> renew_own_certs(const Observation& o, const MemberInfo* me) {
  const int64_t window = o.auto_spec.cert_renew_before_seconds;
  if (window == 0 || me == nullptr || o.local.data != "member" || !o.local.has_leader || o.local.certs_expire_unix == 0) {
    return std::nullopt;
  }
  if (o.local.certs_expire_unix - o.now_unix >= window) return std::nullopt;
  const std::string when = format_rfc3339_seconds(SystemTime(std::chrono::seconds(o.local.certs_expire_unix)));
  const std::string command = "etcdadm certs renew all (on " + o.self + "; etcd reads them on its next handshake)";
  for (const auto& m : o.cluster.info.members) {
    if (!member_healthy(m)) {
      return make(Step::kWait, "this host's certificate " + o.local.first_expiring + " expires " + when +
                                   ": renewed once every member is healthy (" + member_label(m) + " is not)",
                  command);
    }
  }
  return make(Step::kRenewCerts,
              "this host's certificate " + o.local.first_expiring + " expires " + when + ", within the spec's " +
                  std::to_string(window / 3600) + " h: renewing its member's certificates with their keys, subjects and "
                  "SANs (no restart: etcd reads them on its next handshake)",
              command);
}

// This host's part of a version change: its turn (carried out, or finished after an interruption),
// or a change stopped part way that no turn covers (left to a person); nullopt otherwise.
std::optional<Decision> change_own_version(const Observation& o, const MemberInfo* me) {
  if (o.local.data != "member") return std::nullopt;
  const VersionTurn* turn = o.version_turn && o.version_turn->host == o.self && o.local.member_id != 0 &&
                                    o.version_turn->member_id == o.local.member_id
                                ? &*o.version_turn
                                : nullptr;
  const std::string command = turn ? "etcdadm upgrade apply --version " + turn->to + " --store " + o.store_url : "";
  if (o.local.version_change) {
    const InterruptedChange& c = *o.local.version_change;
    if (turn != nullptr && !c.rollback && version_text(c.to) == version_text(turn->to)) {
      Decision d = make(Step::kChangeVersion, "version turn " + std::to_string(turn->sequence) + ": the change of this member from " +
                                                  c.from + " to " + c.to + " stopped part way: finishing it", command);
      d.turn = *turn;
      return d;
    }
    // Stopped after the switch (the member runs the change's version), so the next turn may have
    // been given already: what is left only checks and records (the switch never restarts a
    // member that runs its target), so it is finished whoever's turn it is.
    if (!c.rollback && me != nullptr && me->reachable && version_text(me->version) == version_text(c.to)) {
      Decision d = make(Step::kChangeVersion, "the change of this member from " + c.from + " to " + c.to +
                                                  " stopped after its switch: finishing its checks (no restart)",
                        "etcdadm upgrade apply --version " + c.to + " --store " + o.store_url);
      d.turn = turn != nullptr ? *turn : VersionTurn{};
      d.turn.to = c.to;
      return d;
    }
    return make(Step::kWait, "a " + std::string(c.rollback ? "rollback" : "change") + " of this member's etcd from " + c.from + " to " +
                                 c.to + " started outside the controllers' turns and has not finished; nothing else is done "
                                 "on this host until it has",
                c.rollback ? "etcdadm upgrade rollback" : "etcdadm upgrade apply --version " + c.to + " (or etcdadm upgrade rollback)");
  }
  if (turn != nullptr && o.local.etcd_running && me != nullptr && me->reachable &&
      version_text(me->version) != version_text(turn->to)) {
    Decision d = make(Step::kChangeVersion, "version turn " + std::to_string(turn->sequence) + " names this host: member " +
                                                id_hex(me->id) + " from " + me->version + " to " + turn->to +
                                                " (a backup first; leadership moved away first when it leads)",
                      command);
    d.turn = *turn;
    return d;
  }
  return std::nullopt;
}

}  // namespace

Decision decide(const Observation& o, const std::string& new_token) {
  if (o.pause) {
    std::string since = o.pause->since_unix > 0 ? " since " + format_rfc3339_seconds(std::chrono::system_clock::from_time_t(o.pause->since_unix)) : "";
    return make(Step::kWait,
                "paused by " + o.pause->by + since + (o.pause->reason.empty() ? "" : " (" + o.pause->reason + ")") +
                    ": no controller acts",
                "etcdadm auto resume --store " + o.store_url);
  }
  if (!o.spec) {
    return make(Step::kWait, "the store has no cluster spec (control/etcd-cluster-spec)",
                "etcdadm seed --store " + o.store_url + " --members 3 --version <etcd version>");
  }
  if (!o.queue_problem.empty()) {
    return make(Step::kWait, "the command queue cannot be read, so no controller acts: " + o.queue_problem,
                "etcdadm etcd-manager list-commands --store " + o.store_url +
                    ", then remove the bad command (etcdadm etcd-manager delete-command KEY)");
  }
  if (auto queued = run_queue(o, new_token)) return *queued;
  // Total loss: the store says a cluster was created, no member answers, and no host (this one
  // included) holds a member's data. Nothing here can bring the data back but a backup.
  if (total_loss(o)) {
    Decision d = o.auto_spec.auto_restore ? auto_restore(o, new_token)
                                          : make(Step::kWait,
                                                 "total loss: the store says a cluster was created (control/etcd-cluster-created), "
                                                 "but no member answers and no host holds a member's data; a new, empty cluster is "
                                                 "never created over it, and auto-restore is off",
                                                 manual_restore_commands(o));
    d.total_loss = d.step == Step::kWait;
    return d;
  }

  const ClusterInfo& info = o.cluster.info;
  const MemberInfo* me = o.cluster.answered ? find_member_by_peer_url(info, o.self_peer_url) : nullptr;
  const bool removed = local_member_removed(o);
  if (o.local.data == "member" && removed) {
    if (auto c = o.maintenance.corrupt.find(o.local.member_id); c != o.maintenance.corrupt.end()) {
      const std::string how = c->second.refused_to_start
                                  ? "etcd refused to start it on data that differs from its peers', which agreed on HashKV " +
                                        std::to_string(c->second.majority_hash) + " at revision " + std::to_string(c->second.revision)
                                  : "its HashKV at revision " + std::to_string(c->second.revision) + " was " +
                                        std::to_string(c->second.hash) + ", the majority's " + std::to_string(c->second.majority_hash);
      Decision d = make(Step::kForgetMember,
                        "this host's member " + id_hex(o.local.member_id) + " was found corrupt by " + c->second.host + " (" + how +
                            ") and removed: stopping it and setting its data aside for a person, so that the host can join again",
                        "mv <data-dir> <data-dir>.corrupt; etcdadm reset --skip-remove-member");
      d.set_aside_as = "corrupt";
      return d;
    }
    // Removed as unhealthy, by a shrink or by a person: the host cannot tell which, and its data may
    // hold writes nobody else has (a member cut off and replaced), so the newest one is kept.
    Decision d = make(Step::kForgetMember,
                      "this host's member " + id_hex(o.local.member_id) +
                          " was removed from the cluster: stopping it and setting its data aside (only the newest removed "
                          "member's data is kept), so that the host can join again",
                      "mv <data-dir> <data-dir>.removed; etcdadm reset --skip-remove-member");
    d.set_aside_as = "removed";
    return d;
  }
  if (o.local.data == "lost") {
    if (removed || (o.cluster.answered && me == nullptr && healthy_member_with_client_url(info) != nullptr)) {
      return make(Step::kForgetMember, "this host's lost member is no longer in the cluster: the host is a spare now, to be added again",
                  "etcdadm reset --skip-remove-member");
    }
    return make(Step::kWait,
                "this host ran a member whose data is gone: it is never started on empty data (etcd would rejoin with a "
                "lost log); it waits until its old member is removed and it can join again",
                "etcdadm join --replace " + o.self + " <a member's client URL> (with this host's member flags)");
  }
  if (auto version = change_own_version(o, me)) return *version;
  if (o.local.data == "member" && !o.local.etcd_running) {
    if (!o.local.etcd_refused.empty() && o.local.seconds_since_start >= 0 && o.local.seconds_since_start < kRefusedRestartSeconds) {
      return make(Step::kWait,
                  "etcd refused to start this host's member: its initial corruption check found the member's data differs from a "
                  "peer's. The acting controller compares the other members' HashKV and replaces this member when they agree; "
                  "it is started again every " + std::to_string(kRefusedRestartSeconds) + " s meanwhile",
                  "etcdadm hashkv (on a healthy member's host)");
    }
    return make(Step::kStartLocalMember, "this host's member is not running", "etcdadm member restart (or start its service)");
  }

  // This host's part of a plan: its member starts from it while the cluster it plans does not
  // exist yet, or (started late) exists and still waits for this member as a voter.
  if (o.plan && o.plan->member(o.self) && o.local.data == "empty") {
    const bool before_creation = !o.cluster.answered && !o.created_marker;
    const bool late_starter = me != nullptr && me->name.empty() && !me->learner;
    if (before_creation || late_starter) {
      if (o.plan->ca_sha256 != o.ca_sha256) {
        return make(Step::kWait, "plan " + std::to_string(o.plan->sequence) + " lists this host, but for another CA (" +
                                     o.plan->ca_sha256.substr(0, 12) + "..., this host holds " + o.ca_sha256.substr(0, 12) +
                                     "...)",
                    "copy the cluster's ca.crt and ca.key into this host's certs dir");
      }
      Decision d = make(Step::kStartPlannedMember,
                        std::string(late_starter ? "the cluster still waits for this member" : "plan " + std::to_string(o.plan->sequence) + " lists this host") +
                            ": creating its member (" + names_of(o.plan->members) + ")",
                        "etcdadm init --initial-cluster " + o.plan->initial_cluster() + " --initial-cluster-token " +
                            o.plan->cluster_token + " --name " + o.self);
      d.plan = *o.plan;
      return d;
    }
  }
  // Added by the acting controller: this host starts the learner and joins.
  if (o.local.data == "empty" && me != nullptr && me->name.empty() && me->learner) {
    const MemberInfo* via = healthy_member_with_client_url(info);
    if (via == nullptr) return make(Step::kWait, "this host was added as a learner, but no healthy member answers to join through");
    Decision d = make(Step::kJoinAsAdded, "this host was added to the cluster as learner " + id_hex(me->id) + ": joining",
                      "etcdadm join " + via->client_urls[0] + " --name " + o.self);
    d.join_endpoint = via->client_urls[0];
    d.member_id = me->id;
    return d;
  }

  if (o.local.data == "member" && o.local.has_leader && !o.created_marker) {
    return make(Step::kMarkCreated, "the cluster has a leader and the store does not say it was created yet",
                "etcdadm etcd-manager get --store " + o.store_url + " (shows etcd-cluster-created)");
  }

  const auto with_data = hosts_with_data(o);
  const bool cluster_anywhere = o.cluster.answered || !with_data.empty();
  if (!o.created_marker && !o.plan && !cluster_anywhere) return plan_new_cluster(o, new_token);

  if (!o.cluster.answered) {
    if (o.plan && !o.created_marker) {
      return make(Step::kIdle, "waiting for the members of plan " + std::to_string(o.plan->sequence) + " (" +
                                   names_of(o.plan->members) + ") to start and elect a leader");
    }
    if (!o.plan && !o.created_marker) {
      return make(Step::kWait, "no cluster answers and no plan exists, but hosts hold member data (" + join_list(with_data) +
                                   "): not planning a new cluster over it");
    }
    return make(Step::kWait, "no member of the cluster answers; hosts with member data: " + join_list(with_data) +
                                 ": waiting for a quorum of them to come back");
  }
  if (auto renew = renew_own_certs(o, me)) return *renew;
  if (auto rotation = rotate_own_ca(o)) return *rotation;
  // The controller beside the Raft leader acts for the cluster: etcd itself chose it, a minority
  // has no leader, so a host cut off from the majority never acts.
  if (is_acting(o)) return act_on_cluster(o);
  if (o.local.data == "member") {
    Decision d = make(Step::kIdle, "member " + id_hex(o.local.member_id) + " of a cluster of " + std::to_string(info.members.size()) +
                                       " (spec: " + std::to_string(o.spec->member_count) + "); the leader's controller acts");
    // A member not on the spec's version yet reads the store every round: its turn may come.
    d.settled = me != nullptr && version_text(me->version) == version_text(o.spec->etcd_version);
    return d;
  }
  return make(Step::kIdle, "spare host: the cluster has " + std::to_string(info.members.size()) +
                               " members, the spec asks for " + std::to_string(o.spec->member_count));
}

}  // namespace etcdadm

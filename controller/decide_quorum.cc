// A lost quorum (rules L and RQ of controller/decide.cc): the cluster answers, but no member this
// host reaches names a leader, for longer than an election. Seen as one, never as "the leader's
// controller acts": each host waits and says which voters answer (with their revisions) and which
// do not; once it lasted the spec's replaceAfter (the time after which a member that does not
// answer is taken for gone), it is reported as a quorum lost for good (its own gauge) with what a
// person runs: `etcdadm recover` on the survivor furthest along, the controllers paused meanwhile.
// With the spec's recoverQuorum on, the controllers do it themselves, only where it is known safe:
// every voter that does not answer is on a live host whose record says it holds no data (a host
// rebuilt on an empty disk), so no majority can be serving behind a partition; the furthest
// survivor's host writes one plan (replace-if-match) and recovers, the other hosts set their data
// aside and are joined as spares.
#include <algorithm>

#include "common/text.h"
#include "controller/decide_concerns.h"

namespace etcdadm {

std::optional<QuorumLoss> quorum_loss(const Observation& o) {
  if (!o.created_marker || !o.cluster.answered || o.cluster.info.leader_id != 0) return std::nullopt;
  QuorumLoss loss;
  for (const auto& [m, host] : decide_parts::member_hosts(o)) {
    if (m->learner) continue;
    const std::string name = m->name.empty() ? id_hex(m->id) : m->name;
    if (m->reachable) {
      loss.survivors.push_back({name, host ? host->name : "", m->id, m->revision});
    } else {
      loss.unreachable.push_back(name);
    }
  }
  if (loss.survivors.empty()) return std::nullopt;
  std::sort(loss.unreachable.begin(), loss.unreachable.end());
  std::stable_sort(loss.survivors.begin(), loss.survivors.end(),
                   [](const auto& a, const auto& b) { return a.revision > b.revision; });
  return loss;
}

namespace decide_parts {

namespace {

const HostView* host_view(const Observation& o, const std::string& name) {
  for (const auto& h : o.hosts) {
    if (h.record.name == name) return &h;
  }
  return nullptr;
}

// The spec's recoverQuorum: the furthest survivor's host plans its recovery once every voter that
// does not answer is known to hold no data; anything that may still hold data and cannot be asked
// blocks it (a majority behind a partition would go on as a second cluster).
Decision recover_quorum(const Observation& o, const QuorumLoss& loss, const std::string& seen,
                        const std::string& token) {
  std::vector<std::string> blockers;
  for (const auto& [m, host] : member_hosts(o)) {
    if (m->learner || m->reachable) continue;
    const std::string name = m->name.empty() ? id_hex(m->id) : m->name;
    const HostView* h = host ? host_view(o, host->name) : nullptr;
    if (h == nullptr) {
      blockers.push_back(name + " (no host record: nothing says it holds no data)");
    } else if (!h->live) {
      blockers.push_back(name + " (its host " + h->record.name +
                         "'s record is not live: it may hold the member's data behind a partition)");
    } else if (!o.rewritten_since_quorum_loss.count(h->record.name)) {
      blockers.push_back(name + " (its host " + h->record.name +
                         " has not written its record since the quorum was lost: it may hold the member's data)");
    } else if (h->record.data == DataState::kMember || h->record.data == DataState::kUnavailable) {
      blockers.push_back(name + " (its host " + h->record.name + " says its data is " +
                         data_state_name(h->record.data) + ")");
    }
  }
  std::sort(blockers.begin(), blockers.end());
  const QuorumLoss::Survivor& furthest = loss.survivors.front();
  const HostView* survivor_host = furthest.host.empty() ? nullptr : host_view(o, furthest.host);
  if (survivor_host == nullptr || !survivor_host->live) {
    blockers.push_back("the furthest survivor " + furthest.member + " (no live controller beside it)");
  }
  const std::string command =
      "etcdadm auto pause --store " + o.store_url + ", then on " +
      (furthest.host.empty() ? "the host of member " + furthest.member : "host " + furthest.host) +
      ": etcdadm recover --store " + o.store_url;
  if (!blockers.empty()) {
    Decision d =
        make(Step::kWait,
             "quorum lost for good: " + seen +
                 "; recover-quorum is on, but the controllers do not recover it while a member may still "
                 "hold data that cannot be asked: " +
                 join_list(blockers),
             "bring those hosts back (or rebuild them on empty disks), or if they are gone for good: " + command);
    d.quorum_lost = true;
    d.waits_on_a_person = true;
    return d;
  }
  if (furthest.host != o.self) {
    Decision d = make(Step::kWait, "quorum lost for good: " + seen + "; recover-quorum: host " + furthest.host +
                                       " (the furthest along) recovers it, and this host follows its plan");
    d.quorum_lost = true;
    return d;
  }
  Decision d = quorum_recovery_plan(o, furthest, token);
  d.quorum_lost = true;
  d.reason = "quorum lost for good: " + seen + "; recover-quorum: planning member " + furthest.member + " (revision " +
             std::to_string(furthest.revision) + ", the furthest along) as a cluster of one, the others to join it" +
             (o.quorum_loss_log_end > furthest.revision
                  ? " (the change log reaches revision " + std::to_string(o.quorum_loss_log_end) +
                        ": it is replayed onto the member's data)"
                  : "");
  d.command = command;
  return d;
}

}  // namespace

Decision quorum_recovery_plan(const Observation& o, const QuorumLoss::Survivor& furthest, const std::string& token) {
  Decision d;
  d.step = Step::kPlanQuorumRecovery;
  d.plan.sequence = (o.plan ? o.plan->sequence : 0) + 1;
  d.plan.purpose = "recover-quorum";
  d.plan.recovers_member_id = furthest.id;
  d.plan.survivor_revision = furthest.revision;
  d.plan.replaces_cluster_id = o.cluster.info.cluster_id;
  d.plan.cluster_token = token;
  d.plan.etcd_version = o.spec->etcd_version;
  d.plan.ca_sha256 = o.ca_sha256;
  d.plan.members = {{o.self, o.self_peer_url, o.self_client_url}};
  d.plan.written_by = o.self;
  d.plan.written_unix = o.now_unix;
  return d;
}

std::optional<Decision> carry_out_quorum_recovery(const Observation& o) {
  if (!o.plan || o.plan->purpose != "recover-quorum" || o.local.plan_sequence >= o.plan->sequence) return std::nullopt;
  const ClusterPlan& plan = *o.plan;
  const std::string what = "recover-quorum plan " + std::to_string(plan.sequence) + " (member " +
                           id_hex(plan.recovers_member_id) + " of cluster " + id_hex(plan.replaces_cluster_id) +
                           ", revision " + std::to_string(plan.survivor_revision) + ")";
  if (plan.member(o.self)) {
    if (plan.ca_sha256 != o.ca_sha256) {
      return make(Step::kWait, what + " lists this host, but for another CA",
                  "copy the cluster's ca.crt and ca.key into this host's certs dir");
    }
    if (o.local.data != DataState::kMember || o.local.member_id != plan.recovers_member_id) {
      return make(Step::kWait,
                  what + " lists this host, but its member is not that one any more (" + data_state_name(o.local.data) +
                      ", member " + id_hex(o.local.member_id) + ")",
                  "etcdadm recover --store " + o.store_url + " on the host of the survivor furthest along, by hand");
    }
    Decision d = make(Step::kRecoverQuorum,
                      what + " lists this host: its member becomes a cluster of one, its data dir set aside first",
                      "etcdadm recover --store " + o.store_url);
    d.plan = plan;
    return d;
  }
  if (o.local.data != DataState::kEmpty || o.local.etcd_running) {
    Decision d = make(Step::kSetAsideData,
                      what + " recovers the cluster on host " + plan.members.front().name +
                          ": this host's old member is stopped and its data set aside (a spare host now, joined by "
                          "the recovered member's controller)",
                      "etcdadm reset --skip-remove-member --keep-data");
    d.plan = plan;
    return d;
  }
  return std::nullopt;
}

std::optional<Decision> lost_quorum(const Observation& o, const std::string& token) {
  const auto loss = quorum_loss(o);
  if (!loss || o.quorum_lost_seconds < kQuorumLostAfterSeconds) return std::nullopt;
  // The members of a restore plan elect their leader as they come: not a loss while it is young,
  // unless its cluster had a leader since (a loss after the restore is one).
  if (o.plan && (o.plan->restores() || o.plan->purpose == "recover-quorum") && !o.led_since_plan &&
      o.now_unix - o.plan->written_unix < o.auto_spec.replace_after_seconds) {
    return std::nullopt;
  }
  std::string survivors;
  for (const auto& s : loss->survivors) {
    survivors += (survivors.empty() ? "" : ", ") + s.member + " (revision " + std::to_string(s.revision) +
                 (s.host.empty() ? ", no host record" : ", host " + s.host) + ")";
  }
  const std::string unreachable = loss->unreachable.empty() ? "none" : join_list(loss->unreachable);
  const std::string seen = "no member names a leader for " + std::to_string(o.quorum_lost_seconds) +
                           " s: the voters that answer are " + survivors + "; those that do not: " + unreachable;
  const int64_t delay = o.auto_spec.replace_after_seconds;
  if (o.quorum_lost_seconds < delay) {
    return make(Step::kWait,
                seen + ": quorum lost, waiting for it to come back (" +
                    (o.auto_spec.recover_quorum ? "recovered by the controllers" : "reported as lost for good") +
                    " after " + std::to_string(delay) + " s, the spec's replaceAfter)",
                "etcdadm info (on a member's host)");
  }
  if (o.auto_spec.recover_quorum) return recover_quorum(o, *loss, seen, token);
  const QuorumLoss::Survivor& furthest = loss->survivors.front();
  const std::string on = furthest.host.empty() ? "the host of member " + furthest.member : "host " + furthest.host;
  Decision d =
      make(Step::kWait,
           "quorum lost for good: " + seen +
               (o.quorum_loss_log_end > 0
                    ? "; the change log in the store reaches revision " + std::to_string(o.quorum_loss_log_end)
                    : "; the store holds no change log of the cluster") +
               ". No controller recovers it by itself: only a person knows that " + unreachable +
               " are gone for good (behind a partition they would go on as a second cluster)",
           "if " + unreachable + " are gone for good: etcdadm auto pause --store " + o.store_url + ", then on " + on +
               " (the furthest along): etcdadm recover --store " + o.store_url +
               "; on every other host whose member survived: etcdadm reset --skip-remove-member --keep-data; then "
               "etcdadm auto resume --store " +
               o.store_url + " (the acting controller adds the hosts without a member as the spec asks)");
  d.quorum_lost = true;
  d.waits_on_a_person = true;
  return d;
}

}  // namespace decide_parts
}  // namespace etcdadm

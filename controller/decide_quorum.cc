// A lost quorum (rule L of controller/decide.cc): the cluster answers, but no member this host
// reaches names a leader, for longer than an election. Seen as one, never as "the leader's
// controller acts": each host waits and says which voters answer (with their revisions) and which
// do not; once it lasted the spec's replaceAfter (the time after which a member that does not
// answer is taken for gone), it is reported as a quorum lost for good (its own gauge) with what a
// person runs: `etcdadm recover` on the survivor furthest along, the controllers paused meanwhile.
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

std::optional<Decision> lost_quorum(const Observation& o) {
  const auto loss = quorum_loss(o);
  if (!loss || o.quorum_lost_seconds < kQuorumLostAfterSeconds) return std::nullopt;
  // The members of a restore plan elect their leader as they come: not a loss while it is young.
  if (o.plan && o.plan->restores() && o.now_unix - o.plan->written_unix < o.auto_spec.replace_after_seconds) {
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
                seen + ": quorum lost, waiting for it to come back (reported as lost for good after " +
                    std::to_string(delay) + " s, the spec's replaceAfter)",
                "etcdadm info (on a member's host)");
  }
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

// Membership (controller/decide.cc): this host's own member (started when down, forgotten when
// removed, never started on lost data, joined when added as a learner) and the acting
// controller's changes, one at a time: learners promoted, unhealthy voters replaced after the
// spec's grace, the count brought to the spec's; each only when it does not cost quorum.
#include <algorithm>

#include "common/text.h"
#include "controller/decide_concerns.h"
#include "etcdadm/quorum.h"

namespace etcdadm::decide_parts {

std::optional<Decision> forget_or_wait_for_replacement(const Observation& o, const MemberInfo* me) {
  const ClusterInfo& info = o.cluster.info;
  const bool removed = local_member_removed(o);
  if (removed && o.removal_seen_seconds < kRemovalConfirmSeconds &&
      (o.local.data == DataState::kMember || o.local.data == DataState::kLost)) {
    return make(Step::kWait, "this host's member " + id_hex(o.local.member_id) +
                                 " is missing from its cluster's member list: confirmed once seen for " +
                                 std::to_string(kRemovalConfirmSeconds) +
                                 " s (a member answers that list from its own state, which may lag)");
  }
  if (o.local.data == DataState::kMember && removed) {
    if (auto corrupt = forget_corrupt_member(o)) return *corrupt;
    // Removed as unhealthy, by a shrink or by a person: the host cannot tell which, and its data may
    // hold writes nobody else has (a member cut off and replaced), so the newest one is kept.
    Decision d =
        make(Step::kForgetMember,
             "this host's member " + id_hex(o.local.member_id) +
                 " was removed from the cluster: stopping it and setting its data aside (only the newest removed "
                 "member's data is kept), so that the host can join again",
             "mv <data-dir> <data-dir>.removed; etcdadm reset --skip-remove-member");
    d.set_aside = SetAside::kRemoved;
    return d;
  }
  if (o.local.data == DataState::kLost) {
    if (removed || (o.cluster.answered && me == nullptr && healthy_member_with_client_url(info) != nullptr)) {
      return make(Step::kForgetMember,
                  "this host's lost member is no longer in the cluster: the host is a spare now, to be added again",
                  "etcdadm reset --skip-remove-member");
    }
    return make(
        Step::kWait,
        "this host ran a member whose data is gone: it is never started on empty data (etcd would rejoin with a "
        "lost log); it waits until its old member is removed and it can join again",
        "etcdadm join --replace " + o.self + " <a member's client URL> (with this host's member flags)");
  }
  return std::nullopt;
}

std::optional<Decision> start_stopped_member(const Observation& o) {
  if (o.local.data != DataState::kMember || o.local.etcd_running) return std::nullopt;
  if (!o.replaced_cluster_leader.empty() && o.plan) {
    return make(Step::kWait,
                "this host's member, restored by plan " + std::to_string(o.plan->sequence) +
                    ", starts once the cluster the plan replaces (ID " + id_hex(o.plan->replaces_cluster_id) +
                    ") has no leader: its member at " + o.replaced_cluster_leader +
                    " still answers with one (a host the plan leaves out whose controller has not stopped its "
                    "member: down or paused?). Two clusters never serve at once",
                "etcdadm reset --skip-remove-member (on the host of " + o.replaced_cluster_leader +
                    "), or start its controller");
  }
  if (!o.local.etcd_refused.empty() && o.local.seconds_since_start >= 0 &&
      o.local.seconds_since_start < kRefusedRestartSeconds) {
    return make(
        Step::kWait,
        "etcd refused to start this host's member: its initial corruption check found the member's data differs from a "
        "peer's. The acting controller compares the other members' HashKV and replaces this member when they agree; "
        "it is started again every " +
            std::to_string(kRefusedRestartSeconds) + " s meanwhile",
        "etcdadm hashkv (on a healthy member's host)");
  }
  return make(Step::kStartLocalMember, "this host's member is not running",
              "start its service (systemctl start etcd), or etcdadm init phase start with the member's flags");
}

std::optional<Decision> join_as_added(const Observation& o, const MemberInfo* me) {
  if (o.local.data != DataState::kEmpty || me == nullptr || !me->name.empty() || !me->learner) return std::nullopt;
  const MemberInfo* via = healthy_member_with_client_url(o.cluster.info);
  if (via == nullptr)
    return make(Step::kWait, "this host was added as a learner, but no healthy member answers to join through");
  Decision d = make(Step::kJoinAsAdded, "this host was added to the cluster as learner " + id_hex(me->id) + ": joining",
                    "etcdadm join " + via->client_urls[0] + " --name " + o.self);
  d.join_endpoint = via->client_urls[0];
  d.member_id = me->id;
  return d;
}

namespace {

// The host whose record says it runs member `m` and that member answers it with a leader, written
// since `m` stopped answering this host (Observation::rewritten_since_unhealthy): a dead host's
// last record, fresh as it still looks, says nothing of now.
const HostView* host_seeing_member_healthy(const Observation& o, const MemberInfo& m) {
  if (!o.rewritten_since_unhealthy.count(m.id)) return nullptr;
  for (const auto& h : o.hosts) {
    if (h.live && h.record.name != o.self && h.record.member_id == m.id && h.record.etcd_running && h.record.has_leader)
      return &h;
  }
  return nullptr;
}

// What a resize from `from` voters toward the spec's `to` does to the failures the cluster
// survives, said with every step of it: a spec that lowers it is carried out, never silently.
std::string tolerance_change(int from, int to) {
  const int before = fault_tolerance(from), after = fault_tolerance(to);
  std::string out;
  if (after < before) {
    out = "; the spec lowers the cluster's fault tolerance from " + std::to_string(before) + " to " +
          std::to_string(after) + " failed member" + (after == 1 ? "" : "s");
  }
  if (to % 2 == 0) {
    out += "; an even size (" + std::to_string(to) + ") survives no more failures than " + std::to_string(to - 1) +
           " members, and needs one more for quorum";
  }
  return out;
}

}  // namespace

Decision act_on_cluster(const Observation& o) {
  const ClusterInfo& info = o.cluster.info;
  const int n = o.spec->member_count;
  std::vector<const MemberInfo*> voters, learners, unhealthy;
  for (const auto& m : info.members) {
    (m.learner ? learners : voters).push_back(&m);
    if (!m.learner && !member_healthy(m)) unhealthy.push_back(&m);
  }
  const std::string endpoint = o.self_client_url;

  // A learner: its host starts it, then it is promoted (etcd refuses until it has caught up). One
  // that is still a learner after the replacement grace (its host never started it, or it never
  // caught up) is removed: a learner has no vote, so that never costs quorum, and a learner that
  // never comes must not hold back every other rule.
  std::optional<Decision> learner_wait;
  for (const auto* l : learners) {
    const auto it = o.learner_seconds.find(l->id);
    const int64_t secs = it == o.learner_seconds.end() ? 0 : it->second;
    if (secs >= o.auto_spec.replace_after_seconds) {
      Decision d = make(Step::kRemoveMember,
                        "learner " + member_label(*l) + " (" + (l->peer_urls.empty() ? "?" : l->peer_urls[0]) +
                            ") has been a learner for " + std::to_string(secs) + " s (replaced after " +
                            std::to_string(o.auto_spec.replace_after_seconds) + " s): " +
                            (l->name.empty() ? "its host never started it" : "it never caught up to be promoted") +
                            "; removing it (a learner has no vote: quorum is unchanged)",
                        "etcdctl member remove " + id_hex(l->id));
      d.member_id = l->id;
      return d;
    }
    if (l->name.empty()) {
      if (!learner_wait) {
        learner_wait =
            make(Step::kWait, "learner " + id_hex(l->id) + " (" + (l->peer_urls.empty() ? "?" : l->peer_urls[0]) +
                                  ") was added; waiting for its host to start it (removed after " +
                                  std::to_string(o.auto_spec.replace_after_seconds) + " s)");
      }
      continue;
    }
    Decision d =
        make(Step::kPromoteMember, "learner " + member_label(*l) + " is started: promoting it once it has caught up",
             "etcdctl member promote " + id_hex(l->id));
    d.member_id = l->id;
    return d;
  }

  if (auto refused = act_on_refused_members(o, unhealthy)) return *refused;

  // An unhealthy voter: removed at once when the cluster has more voters than the spec (the
  // unhealthy go first), else after the grace period; never when that would cost quorum.
  const bool too_many = static_cast<int>(voters.size()) > n;
  // The grace for `m`: the spec's, or kReplaceDampFactor times it for a host replaced within the
  // last kReplaceDampSeconds (a member that fails again at once is not replaced in a loop).
  auto grace_of = [&](const MemberInfo& m) -> std::pair<int64_t, int64_t> {
    for (const auto& url : m.peer_urls) {
      if (auto r = o.replaced_seconds_ago.find(url); r != o.replaced_seconds_ago.end())
        return {o.auto_spec.replace_after_seconds * kReplaceDampFactor, r->second};
    }
    return {o.auto_spec.replace_after_seconds, -1};
  };
  for (const auto* m : unhealthy) {
    auto it = o.unhealthy_seconds.find(m->id);
    const int64_t secs = it == o.unhealthy_seconds.end() ? 0 : it->second;
    const auto [grace, replaced_ago] = grace_of(*m);
    if (!too_many && secs < grace) continue;
    // A second view: its own host, live, says it runs and answers with a leader. The leader's host
    // cannot reach its client port, but it is in its cluster: a partial partition, which a
    // replacement (a backup, a removal, a full resync) would not mend and would repeat.
    if (const HostView* own = host_seeing_member_healthy(o, *m); own != nullptr && !too_many) {
      return make(Step::kWait,
                  "member " + member_label(*m) + " has not answered this host for " + std::to_string(secs) +
                      " s, but its host " + own->record.name +
                      " reports it running with a leader: a partial partition between the two, not a dead member; "
                      "it is not replaced while its host says so",
                  "check the network between this host and " + own->record.name + " (the member's client port " +
                      (m->client_urls.empty() ? std::string("?") : m->client_urls[0]) + ")");
    }
    QuorumCheck q = check_remove(info, m->id);
    if (!q.safe) {
      return make(Step::kWait,
                  "member " + member_label(*m) + " has been unhealthy for " + std::to_string(secs) +
                      " s, but removing it would cost quorum: " + q.explanation,
                  "bring it back, or restore the cluster from a backup (docs/operations.md)");
    }
    Decision d =
        make(Step::kRemoveMember,
             "member " + member_label(*m) +
                 (too_many ? " is unhealthy and the cluster has more voters than the spec's " + std::to_string(n)
                           : " has been unhealthy for " + std::to_string(secs) + " s (replaced after " +
                                 std::to_string(grace) + " s" +
                                 (replaced_ago >= 0 ? ", " + std::to_string(kReplaceDampFactor) +
                                                          " times the spec's: its host's member was replaced " +
                                                          std::to_string(replaced_ago) + " s ago"
                                                    : std::string()) +
                                 ")") +
                 ": removing it (" + q.explanation + ")",
             "etcdadm member remove " + (m->name.empty() ? id_hex(m->id) : m->name) + " --endpoints " + endpoint);
    d.member_id = m->id;
    if (!too_many && !m->peer_urls.empty()) d.replaced_peer_url = m->peer_urls.front();
    return d;
  }
  if (!unhealthy.empty()) {
    std::string names;
    for (const auto* m : unhealthy) {
      auto it = o.unhealthy_seconds.find(m->id);
      names += (names.empty() ? "" : ", ") + member_label(*m) + " for " +
               std::to_string(it == o.unhealthy_seconds.end() ? 0 : it->second) + " s";
      if (const auto [grace, replaced_ago] = grace_of(*m); replaced_ago >= 0) {
        names += " (its host's member was replaced " + std::to_string(replaced_ago) + " s ago: replaced again after " +
                 std::to_string(grace) + " s)";
      }
    }
    return make(Step::kWait, "unhealthy: " + names + "; a member is replaced after " +
                                 std::to_string(o.auto_spec.replace_after_seconds) +
                                 " s, and nothing else changes meanwhile");
  }

  if (auto corruption = act_on_corruption(o)) return *corruption;

  // etcd's NOSPACE alarm: the cluster takes no writes. Recovered before anything else changes.
  if (auto space = recover_space(o)) return *space;
  // Nothing else changes while a learner waits for its host (the rules above still ran).
  if (learner_wait) return *learner_wait;

  if (static_cast<int>(voters.size()) < n) {
    std::vector<const HostRecord*> spares;
    for (const auto& h : o.hosts) {
      if (h.live && h.record.data == DataState::kEmpty && joinable_ca(o, h.record.ca_sha256) &&
          find_member_by_peer_url(info, h.record.peer_url) == nullptr) {
        spares.push_back(&h.record);
      }
    }
    if (spares.empty()) {
      return make(Step::kWait,
                  "the cluster has " + std::to_string(voters.size()) + " of the spec's " + std::to_string(n) +
                      " members and no live spare host: start `etcdadm auto` on another control-plane host");
    }
    std::sort(spares.begin(), spares.end(), [](const HostRecord* a, const HostRecord* b) { return a->name < b->name; });
    Decision d = make(Step::kAddMember,
                      "the cluster has " + std::to_string(voters.size()) + " of the spec's " + std::to_string(n) +
                          " members: adding " + spares[0]->name + " as a learner" +
                          tolerance_change(static_cast<int>(voters.size()), n),
                      "etcdadm join " + endpoint + " --name " + spares[0]->name + " (on " + spares[0]->name + ")");
    d.host = *spares[0];
    return d;
  }
  if (static_cast<int>(voters.size()) > n) {
    // The highest names go, one at a time: the reverse of the order a grow adds spares in, so that
    // the members a client was configured with before a grow are the ones a shrink keeps. The
    // leader is no exception: its leadership goes first to a voter that stays (one transfer, not
    // an election), and the next victim is never the one that just took it over.
    std::vector<const MemberInfo*> by_name(voters.begin(), voters.end());
    std::sort(by_name.begin(), by_name.end(),
              [](const MemberInfo* a, const MemberInfo* b) { return a->name > b->name; });
    std::vector<uint64_t> leaving;
    for (size_t i = 0; i + n < by_name.size(); ++i) leaving.push_back(by_name[i]->id);
    const MemberInfo* victim = by_name.front();
    QuorumCheck q = check_remove(info, victim->id);
    if (!q.safe)
      return make(Step::kWait, "one member too many, but removing " + member_label(*victim) +
                                   " would cost quorum: " + q.explanation);
    const MemberInfo* successor = nullptr;
    if (victim->id == info.leader_id) {
      successor = leadership_successor(info, victim->id, leaving);
      if (successor == nullptr)
        return make(Step::kWait, "one member too many, but " + member_label(*victim) +
                                     " leads and no healthy voter that stays can take its leadership over");
    }
    Decision d =
        make(Step::kRemoveMember,
             "the cluster has " + std::to_string(voters.size()) + " members, the spec " + std::to_string(n) +
                 ": removing " + member_label(*victim) +
                 (successor != nullptr ? " (the leader: its leadership moves to " + member_label(*successor) + " first)"
                                       : "") +
                 " (" + q.explanation + ")" + tolerance_change(static_cast<int>(voters.size()), n),
             (successor != nullptr ? "etcdctl move-leader " + id_hex(successor->id) + " && " : "") +
                 "etcdadm reset (on " + victim->name + ")");
    d.member_id = victim->id;
    if (successor != nullptr) d.leadership_to = successor->id;
    return d;
  }
  if (auto version = change_versions(o)) return *version;
  if (auto maintenance = maintain(o)) return *maintenance;
  if (auto rotation = rotate_cluster_ca(o)) return *rotation;
  Decision d =
      make(Step::kIdle, "member " + id_hex(o.local.member_id) + " (the leader's controller, acting) of a cluster of " +
                            std::to_string(voters.size()) + " healthy voters, as the spec asks");
  d.settled = true;
  return d;
}

Decision idle(const Observation& o, const MemberInfo* me) {
  const ClusterInfo& info = o.cluster.info;
  if (o.local.data == DataState::kMember) {
    Decision d = make(
        Step::kIdle, "member " + id_hex(o.local.member_id) + " of a cluster of " + std::to_string(info.members.size()) +
                         " (spec: " + std::to_string(o.spec->member_count) + ")" +
                         (info.leader_id != 0 ? "; the leader's controller acts" : "; no member names a leader yet"));
    // A member not on the spec's version yet reads the store every round: its turn may come.
    d.settled = me != nullptr && info.leader_id != 0 && version_text(me->version) == version_text(o.spec->etcd_version);
    return d;
  }
  Decision d = make(Step::kIdle, "spare host: the cluster has " + std::to_string(info.members.size()) +
                                     " members, the spec asks for " + std::to_string(o.spec->member_count) +
                                     (info.leader_id != 0 ? "" : "; no member names a leader yet"));
  // A spare learns it was added from the cluster, which is asked every round: while the cluster is
  // whole it reads the store only every idle interval, like a member (it read it every round).
  d.settled =
      o.cluster.answered && info.leader_id != 0 && static_cast<int>(info.members.size()) >= o.spec->member_count;
  return d;
}

}  // namespace etcdadm::decide_parts

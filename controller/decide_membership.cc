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
              "etcdadm member restart (or start its service)");
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
  for (const auto* m : unhealthy) {
    auto it = o.unhealthy_seconds.find(m->id);
    const int64_t secs = it == o.unhealthy_seconds.end() ? 0 : it->second;
    if (!too_many && secs < o.auto_spec.replace_after_seconds) continue;
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
      names += (names.empty() ? "" : ", ") + member_label(*m) + " for " +
               std::to_string(it == o.unhealthy_seconds.end() ? 0 : it->second) + " s";
    }
    return make(Step::kWait, "unhealthy: " + names + "; a member is replaced after " +
                                 std::to_string(o.auto_spec.replace_after_seconds) +
                                 " s, and nothing else changes meanwhile");
  }

  if (auto corruption = act_on_corruption(o)) return *corruption;

  // etcd's NOSPACE alarm: the cluster takes no writes. Recovered before anything else changes.
  if (auto space = recover_space(o)) return *space;

  if (static_cast<int>(voters.size()) < n) {
    std::vector<const HostRecord*> spares;
    for (const auto& h : o.hosts) {
      if (h.live && h.record.data == DataState::kEmpty && h.record.ca_sha256 == o.ca_sha256 &&
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
      if (!q.safe)
        return make(Step::kWait, "one member too many, but removing " + member_label(*victim) +
                                     " would cost quorum: " + q.explanation);
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
                         " (spec: " + std::to_string(o.spec->member_count) + "); the leader's controller acts");
    // A member not on the spec's version yet reads the store every round: its turn may come.
    d.settled = me != nullptr && version_text(me->version) == version_text(o.spec->etcd_version);
    return d;
  }
  return make(Step::kIdle, "spare host: the cluster has " + std::to_string(info.members.size()) +
                               " members, the spec asks for " + std::to_string(o.spec->member_count));
}

}  // namespace etcdadm::decide_parts

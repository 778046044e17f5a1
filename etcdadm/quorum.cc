#include "etcdadm/quorum.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "common/error.h"
#include "common/text.h"
#include "etcd/grpc_errors.h"

namespace etcdadm {

namespace {

int quorum_of(int voters) { return voters / 2 + 1; }

struct Counts {
  int voters = 0;
  int healthy = 0;
  const MemberInfo* member = nullptr;
};

Counts count(const ClusterInfo& info, uint64_t member_id) {
  Counts c;
  for (const auto& m : info.members) {
    if (m.id == member_id) c.member = &m;
    if (m.learner) continue;
    ++c.voters;
    if (member_healthy(m)) ++c.healthy;
  }
  return c;
}

}  // namespace

const char* member_role(const MemberInfo& m) { return m.learner ? "learner" : (m.leader ? "leader" : "follower"); }

std::string member_label(const MemberInfo& m) {
  return (m.name.empty() ? std::string("(not started)") : m.name) + fmt::format(" ({:x})", m.id);
}

// Status lists the cluster's alarms on every member, so an alarm says nothing about which member
// can vote; a member that sees no leader cannot take part in a quorum.
bool member_healthy(const MemberInfo& m) {
  if (!m.reachable) return false;
  for (const auto& e : m.errors) {
    if (etcd_refusal(e) == EtcdRefusal::kNoLeader) return false;
  }
  return true;
}

const MemberInfo* leadership_successor(const ClusterInfo& info, uint64_t leader_id,
                                       const std::vector<uint64_t>& leaving) {
  const MemberInfo* best = nullptr;
  for (const auto& x : info.members) {
    if (x.id == leader_id || x.learner || !member_healthy(x)) continue;
    if (std::find(leaving.begin(), leaving.end(), x.id) != leaving.end()) continue;
    if (best == nullptr || x.raft_index > best->raft_index) best = &x;
  }
  return best;
}

// The counts, and the answer when there is nothing to weigh: an unknown member (not safe) or a
// learner (safe: it holds no vote). nullopt: `member_id` is a voter and the caller decides.
static std::optional<QuorumCheck> counted(const Counts& c, uint64_t member_id, const char* learner_note,
                                          QuorumCheck& q) {
  q.voters = c.voters;
  q.healthy_voters = c.healthy;
  if (c.member == nullptr) {
    q.explanation = fmt::format("member {:x} is not in the cluster", member_id);
    return q;
  }
  if (c.member->learner) {
    q.safe = true;
    q.explanation = member_label(*c.member) + learner_note;
    return q;
  }
  return std::nullopt;
}

QuorumCheck check_stop(const ClusterInfo& info, uint64_t member_id) {
  QuorumCheck q;
  Counts c = count(info, member_id);
  if (auto done = counted(c, member_id, " is a learner: it holds no vote", q)) return *done;
  q.quorum_after = quorum_of(c.voters);
  q.healthy_after = c.healthy - (member_healthy(*c.member) ? 1 : 0);
  q.safe = q.healthy_after >= q.quorum_after;
  q.explanation = fmt::format("{} voting members, {} healthy; with {} down, {} healthy voters remain and quorum is {}",
                              c.voters, c.healthy, member_label(*c.member), q.healthy_after, q.quorum_after);
  if (!q.safe && c.voters == 1) q.explanation += " (a one-member cluster is down while its member restarts)";
  return q;
}

QuorumCheck check_remove(const ClusterInfo& info, uint64_t member_id) {
  QuorumCheck q;
  Counts c = count(info, member_id);
  if (auto done = counted(c, member_id, " is a learner: removing it changes no quorum", q)) return *done;
  int voters_after = c.voters - 1;
  q.healthy_after = c.healthy - (member_healthy(*c.member) ? 1 : 0);
  q.quorum_after = voters_after == 0 ? 1 : quorum_of(voters_after);
  // The removal itself is a raft entry: the cluster must have quorum now to commit it.
  bool quorum_now = c.healthy >= quorum_of(c.voters);
  q.safe = voters_after >= 1 && quorum_now && q.healthy_after >= q.quorum_after;
  q.explanation = fmt::format(
      "{} voting members, {} healthy (quorum {}); without {}, {} voters remain, {} of them healthy, quorum {}",
      c.voters, c.healthy, quorum_of(c.voters), member_label(*c.member), voters_after, q.healthy_after, q.quorum_after);
  if (voters_after == 0) q.explanation += " (it is the last voting member)";
  if (!quorum_now) q.explanation += " (the cluster has no quorum now, so no membership change can commit)";
  return q;
}

const MemberInfo* find_member_by_peer_url(const ClusterInfo& info, const std::string& peer_url) {
  for (const auto& m : info.members) {
    if (std::find(m.peer_urls.begin(), m.peer_urls.end(), peer_url) != m.peer_urls.end()) return &m;
  }
  return nullptr;
}

const MemberInfo* find_member(const ClusterInfo& info, const std::string& name_or_id) {
  const MemberInfo* by_name = nullptr;
  for (const auto& m : info.members) {
    if (m.name != name_or_id) continue;
    if (by_name != nullptr) {
      throw Error(ErrorKind::kInvalidArgument, "two members are named " + name_or_id, "give the member's ID (hex)");
    }
    by_name = &m;
  }
  if (by_name != nullptr) return by_name;
  auto id = parse_id_hex(name_or_id);
  if (!id) return nullptr;
  for (const auto& m : info.members) {
    if (m.id == *id) return &m;
  }
  return nullptr;
}

}  // namespace etcdadm

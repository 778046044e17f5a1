#include "etcdadm/quorum.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

#include "common/error.h"

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

std::string label(const MemberInfo& m) { return (m.name.empty() ? "(unstarted)" : m.name) + fmt::format(" ({:x})", m.id); }

}  // namespace

bool member_healthy(const MemberInfo& m) { return m.reachable && m.errors.empty(); }

QuorumCheck check_stop(const ClusterInfo& info, uint64_t member_id) {
  QuorumCheck q;
  Counts c = count(info, member_id);
  q.voters = c.voters;
  q.healthy_voters = c.healthy;
  if (c.member == nullptr) {
    q.explanation = fmt::format("member {:x} is not in the cluster", member_id);
    return q;
  }
  if (c.member->learner) {
    q.safe = true;
    q.explanation = label(*c.member) + " is a learner: it holds no vote";
    return q;
  }
  q.quorum_after = quorum_of(c.voters);
  q.healthy_after = c.healthy - (member_healthy(*c.member) ? 1 : 0);
  q.safe = q.healthy_after >= q.quorum_after;
  q.explanation = fmt::format("{} voting members, {} healthy; with {} down, {} healthy voters remain and quorum is {}",
                              c.voters, c.healthy, label(*c.member), q.healthy_after, q.quorum_after);
  if (!q.safe && c.voters == 1) q.explanation += " (a one-member cluster is down while its member restarts)";
  return q;
}

QuorumCheck check_remove(const ClusterInfo& info, uint64_t member_id) {
  QuorumCheck q;
  Counts c = count(info, member_id);
  q.voters = c.voters;
  q.healthy_voters = c.healthy;
  if (c.member == nullptr) {
    q.explanation = fmt::format("member {:x} is not in the cluster", member_id);
    return q;
  }
  if (c.member->learner) {
    q.safe = true;
    q.explanation = label(*c.member) + " is a learner: removing it changes no quorum";
    return q;
  }
  int voters_after = c.voters - 1;
  q.healthy_after = c.healthy - (member_healthy(*c.member) ? 1 : 0);
  q.quorum_after = voters_after == 0 ? 1 : quorum_of(voters_after);
  // The removal itself is a raft entry: the cluster must have quorum now to commit it.
  bool quorum_now = c.healthy >= quorum_of(c.voters);
  q.safe = voters_after >= 1 && quorum_now && q.healthy_after >= q.quorum_after;
  q.explanation = fmt::format(
      "{} voting members, {} healthy (quorum {}); without {}, {} voters remain, {} of them healthy, quorum {}",
      c.voters, c.healthy, quorum_of(c.voters), label(*c.member), voters_after, q.healthy_after, q.quorum_after);
  if (voters_after == 0) q.explanation += " (it is the last voting member)";
  if (!quorum_now) q.explanation += " (the cluster has no quorum now, so no membership change can commit)";
  return q;
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
  char* end = nullptr;
  errno = 0;
  unsigned long long id = std::strtoull(name_or_id.c_str(), &end, 16);
  if (name_or_id.empty() || errno != 0 || *end != '\0') return nullptr;
  for (const auto& m : info.members) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

}  // namespace etcdadm

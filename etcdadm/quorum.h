// Quorum arithmetic for commands that take a member down (upgrade, rollback) or out of the
// cluster (member remove, join --replace). Pure functions of what `cluster_info` saw, so the rules
// have known-answer tests; every command prints the explanation it acted on.
//
// A cluster of N voting members needs floor(N/2)+1 of them to commit anything. Learners do not
// vote and never count. A member is counted healthy when it answered Status and sees a leader
// (alarms are the cluster's, listed by every member: upgrade refuses them on its own).
#pragma once

#include <cstdint>
#include <string>

#include "etcdadm/lifecycle/local_member.h"

namespace etcdadm {

struct QuorumCheck {
  bool safe = false;
  int voters = 0;           // voting members now
  int healthy_voters = 0;   // of them, those that answered (the member in question included)
  int quorum_after = 0;     // votes needed once the change is made
  int healthy_after = 0;    // healthy voters left once the change is made
  std::string explanation;  // what was counted, in one sentence, for the command's output
};

// May `member_id` be stopped (restarted on another binary) without the cluster losing quorum?
// The other voters that answered must form a quorum of all voters on their own. A learner may
// always be stopped.
QuorumCheck check_stop(const ClusterInfo& info, uint64_t member_id);

// May `member_id` be removed from the membership? The healthy voters left must form a quorum of
// the voters left (etcd's strict reconfiguration check asks the same), and the last voter is never
// removed.
QuorumCheck check_remove(const ClusterInfo& info, uint64_t member_id);

// The member named `name_or_id` (a name, or an ID in hex as etcdctl prints it); nullptr when none
// is. Throws kInvalidArgument when a name is ambiguous.
const MemberInfo* find_member(const ClusterInfo& info, const std::string& name_or_id);

// The member with `peer_url` among its peer URLs (this host's member, found also when it is down);
// nullptr when none has it.
const MemberInfo* find_member_by_peer_url(const ClusterInfo& info, const std::string& peer_url);

// "name (id in hex)", or "(not started) (id)" for a member added but not started yet: how every
// message names a member.
std::string member_label(const MemberInfo& m);
// "learner", "leader" or "follower": a member's role as tables and JSON name it.
const char* member_role(const MemberInfo& m);

// A member is healthy when it answered Status without "no leader" among its errors.
bool member_healthy(const MemberInfo& m);

// The healthy voter other than `leader_id` (and those in `leaving`) the furthest along (the highest
// raft index): who takes over a leadership handed away before a restart, a defrag or the leader's
// removal; nullptr when no other voter can.
const MemberInfo* leadership_successor(const ClusterInfo& info, uint64_t leader_id,
                                       const std::vector<uint64_t>& leaving = {});

}  // namespace etcdadm

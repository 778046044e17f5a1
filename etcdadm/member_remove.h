// Taking a member out of the membership: `etcdadm member remove NAME|ID` for a host that is gone,
// `etcdadm join --replace NAME|ID` on the host that replaces it, and reset's own removal. Each
// refuses a removal that would leave the cluster without quorum (quorum.h), and a member that still
// answers unless forced (a healthy member is taken out with `etcdadm reset` on its own host).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/quorum.h"

namespace etcdadm {

// The member `target` (name or hex ID) of `info`, checked for removal: it exists (kNotFound
// otherwise), does not answer or `force` is given (kInvalidArgument), and the cluster keeps quorum
// without it (kUnavailable; never overridden). `quorum` gets what was counted.
const MemberInfo& checked_removal(const ClusterInfo& info, const std::string& target, bool force, QuorumCheck& quorum);

// Removes member `id` through `remover` (a client of other members than it: a member applying its
// own removal stops before it answers). etcd's strict reconfiguration check refuses while the
// remaining members have not all been connected for a few seconds (right after a join or a
// restart): that heals by itself and is retried for up to a minute. A removal whose answer was
// lost is recognised by looking at the member list.
void remove_member_through(EtcdClient& remover, uint64_t id, const std::string& name);

struct MemberRemoveOptions {
  MemberConfig member;                 // this host's member: its client certificate reaches the cluster
  std::string target;                  // name or hex ID
  bool force = false;                  // also when it still answers
  std::vector<std::string> endpoints;  // more members to reach the cluster through
};

struct MemberRemoveResult {
  uint64_t id = 0;
  std::string name;
  QuorumCheck quorum;
};

MemberRemoveResult run_member_remove(const MemberRemoveOptions& options);

// The client URLs of every member but `id` (to remove `id` through).
std::vector<std::string> client_urls_except(const ClusterInfo& info, uint64_t id);

}  // namespace etcdadm

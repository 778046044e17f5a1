// Choosing the member to take a snapshot from. Every endpoint is asked for its Status; a member
// that answers with a leader and without errors (a NOSPACE alarm aside: the data is whole) is healthy. The preferred
// endpoint wins when healthy; otherwise the healthy member with the highest raft index (the most up-to-date data) is
// taken.
#pragma once

#include <string>
#include <vector>

#include "common/text.h"  // id_hex: IDs as etcdctl prints them
#include "etcd/client.h"

namespace etcdadm {

struct MemberChoice {
  std::string endpoint;
  etcdserverpb::StatusResponse status;
  bool is_leader() const { return status.header().member_id() == status.leader(); }
};

// Throws kUnavailable listing why each endpoint was rejected when none is usable.
MemberChoice choose_member(EtcdClient& client, const std::string& preferred_endpoint);

}  // namespace etcdadm

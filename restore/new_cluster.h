// The cluster a restore creates: members and IDs computed exactly as etcd computes them
// (etcdserver/api/membership NewMember and RaftCluster.genID, unchanged from 3.4 to 3.7), so the
// same --name/--initial-cluster/--initial-cluster-token give the same member and cluster IDs as
// `etcdutl snapshot restore`, and a member restored by either tool can join the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/text.h"  // id_hex: IDs as etcd prints them

namespace etcdadm {

struct NewMember {
  uint64_t id = 0;
  std::string name;
  std::vector<std::string> peer_urls;  // sorted, as etcd stores them
};

struct NewCluster {
  std::vector<NewMember> members;  // by ID, ascending (the order etcd's restore writes them in)
  uint64_t cluster_id = 0;
  std::string token;
  const NewMember& member(const std::string& name) const;  // throws kInvalidArgument
};

// Member ID: the first 8 bytes (big endian) of SHA-1(sorted peer URLs concatenated + token).
uint64_t member_id(std::vector<std::string> peer_urls, const std::string& token);
// Cluster ID: the first 8 bytes of SHA-1 of the member IDs, sorted, each 8 bytes big endian.
uint64_t cluster_id(std::vector<uint64_t> member_ids);

// Parses --initial-cluster ("name=url,name=url,...": a name may repeat, one URL each) and checks
// every URL as etcd does (http/https/unix/unixs, host:port, no path); refuses a URL used twice.
NewCluster plan_new_cluster(const std::string& initial_cluster, const std::string& token);

}  // namespace etcdadm

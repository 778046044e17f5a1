// This host's member as the other commands reach it: its etcdctl files, the connection to it, a
// restart through its init system, and what `etcdadm info` shows of the cluster around it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/client_pool.h"
#include "etcd/connection.h"
#include "etcdadm/init_system.h"
#include "etcdadm/member_config.h"
#include "etcdadm/pki.h"

namespace etcdadm {

// Writes <config-dir>/etcdctl.env (etcdctl_env) and the etcdctl.sh wrapper that sources it
// (init/join's etcdctl phase; again after an upgrade, as ETCDCTL_API depends on the version).
void write_etcdctl_files(const MemberConfig& member);

// Names etcd's corruption checks in the member's env file as etcd `member.version` reads them
// (with_corruption_checks), leaving every other variable; a missing env file, or one already so,
// is left as it is. After a version change, and after a restored member's first start.
void write_corruption_checks(const MemberConfig& member);

// The certificates the member needs: the server and peer certificates name its bind address (and
// its loopback where that is not 127.0.0.1, which every member's certificates name).
MemberPkiSpec member_pki_spec(const MemberConfig& member);

// The connection this host's member is reached with: its loopback client URL and the etcdctl
// client certificate.
ConnectionConfig local_connection(const MemberConfig& member);

// Stops and starts the member through its init system and waits until it serves a linearizable
// read again (after `certs renew`: etcd reads its certificates only at start).
void restart_member(const MemberConfig& member, std::chrono::seconds timeout = std::chrono::seconds(120));
// The same through `init_system` (a caller that keeps one, as the controller does).
void restart_member(const MemberConfig& member, InitSystem& init_system, std::chrono::seconds timeout);

struct MemberInfo {
  uint64_t id = 0;
  std::string name;
  std::vector<std::string> peer_urls;
  std::vector<std::string> client_urls;
  bool learner = false;
  bool local = false;  // the member this host runs
  // From Status on its client URL (absent when it did not answer).
  bool reachable = false;
  std::string status_error;
  bool leader = false;
  std::string version;
  int64_t revision = 0;  // the newest revision it serves (its Status header)
  int64_t db_size = 0;
  int64_t db_size_in_use = 0;
  int64_t db_size_quota = 0;  // 3.6+: its --quota-backend-bytes as etcd applies it; 0 before 3.6
  uint64_t raft_index = 0;
  uint64_t raft_applied_index = 0;
  uint64_t raft_term = 0;
  std::string storage_version;      // 3.6+
  std::string downgrade_target;     // 3.6+: the target of an enabled downgrade ("3.5.0"), else empty
  std::vector<std::string> errors;  // StatusResponse.errors (alarms etc.)
};

struct ClusterInfo {
  uint64_t cluster_id = 0;
  uint64_t leader_id = 0;
  std::vector<MemberInfo> members;
};

// Member list of the cluster (through the first of `connection`'s endpoints that gives one) and
// every member's Status.
ClusterInfo cluster_info(const ConnectionConfig& connection, uint64_t local_member_id);
// The same through the clients of `pool` (connections kept across calls), listing through
// `endpoints` in turn.
ClusterInfo cluster_info(EtcdClientPool& pool, const std::vector<std::string>& endpoints, uint64_t local_member_id);
// The same for a survey where most members may be gone (`etcdadm recover`): a member whose host
// says nothing listens on its client port (connection refused) is taken as not answering at once,
// instead of after the connection's dial timeout (gRPC waits that out even on a refusal).
ClusterInfo cluster_info_failing_fast(const ConnectionConfig& connection, uint64_t local_member_id);

// `connection` with every member's client URLs of `info` added to its endpoints (after its own,
// each once): a cluster call then reaches any member that answers.
ConnectionConfig with_member_endpoints(ConnectionConfig connection, const ClusterInfo& info);

// The member of `list` with `url` among its peer URLs; nullptr when none has it.
const etcdserverpb::Member* find_by_peer_url(const etcdserverpb::MemberListResponse& list, const std::string& url);

}  // namespace etcdadm

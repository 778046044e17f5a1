#include "etcdadm/lifecycle/local_member.h"

#include <algorithm>
#include <future>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "etcd/client.h"
#include "etcd/tcp_connect.h"
#include "etcdadm/init_system.h"
#include "etcdadm/member_health.h"

namespace etcdadm {

MemberPkiSpec member_pki_spec(const MemberConfig& member) {
  MemberPkiSpec spec;
  spec.certs_dir = member.certs_dir;
  spec.name = member.name;
  spec.client_hosts = {member.bind_address};
  spec.peer_hosts = {member.bind_address};
  if (member.loopback_address != kIpv4Loopback) spec.client_hosts.push_back(member.loopback_address);
  spec.extra_sans = member.server_cert_extra_sans;
  return spec;
}

const etcdserverpb::Member* find_by_peer_url(const etcdserverpb::MemberListResponse& list, const std::string& url) {
  for (const auto& m : list.members()) {
    for (const auto& u : m.peerurls()) {
      if (u == url) return &m;
    }
  }
  return nullptr;
}

void write_etcdctl_files(const MemberConfig& m) {
  write_file_atomic(m.etcdctl_env_file(), render_env_file(etcdctl_env(m)), 0644, /*overwrite=*/true);
  std::string wrapper = "#!/bin/sh\n# etcdctl for etcd member " + m.name + " (written by etcdadm)\nset -a\n. " +
                        m.etcdctl_env_file() + "\nset +a\nexec " + m.etcdctl_binary() + " \"$@\"\n";
  make_dirs(parent_dir(m.etcdctl_wrapper()));
  write_file_atomic(m.etcdctl_wrapper(), wrapper, 0755, /*overwrite=*/true);
}

void write_corruption_checks(const MemberConfig& m) {
  if (!path_exists(m.env_file())) return;
  const EnvVars env = parse_env_file(read_file(m.env_file()));
  const EnvVars checked = with_corruption_checks(env, m.version);
  if (checked != env) write_file_atomic(m.env_file(), render_env_file(checked), 0600, /*overwrite=*/true);
}

ConnectionConfig local_connection(const MemberConfig& member) {
  return connection_to(member, {member.loopback_client_url()});
}

void restart_member(const MemberConfig& member, std::chrono::seconds timeout) {
  auto init_system = make_init_system(member.init_system);
  restart_member(member, *init_system, timeout);
}

void restart_member(const MemberConfig& member, InitSystem& init_system, std::chrono::seconds timeout) {
  init_system.stop(member, std::chrono::milliseconds(10000));
  init_system.start(member);
  EtcdClient local(local_connection(member));
  wait_member_healthy(member, local, init_system, timeout);
}

ConnectionConfig with_member_endpoints(ConnectionConfig connection, const ClusterInfo& info) {
  auto& e = connection.endpoints;
  for (const auto& m : info.members) {
    for (const auto& u : m.client_urls) {
      if (std::find(e.begin(), e.end(), u) == e.end()) e.push_back(u);
    }
  }
  return connection;
}

namespace {

// How long the survey gives a member's host to say whether anything listens on its client port.
constexpr std::chrono::milliseconds kRefusalProbe{300};

// cluster_info; with `fail_fast`, a member whose client port refuses connections is not dialled.
ClusterInfo survey(EtcdClientPool& pool, const std::vector<std::string>& endpoints, uint64_t local_member_id,
                   bool fail_fast) {
  auto refused = [&](const std::string& url) { return fail_fast && refuses_connections(url, kRefusalProbe); };
  // Each endpoint in turn, whatever the failure: a learner refuses MemberList, and a stuck join is
  // exactly when an operator asks for info.
  etcdserverpb::MemberListResponse list;
  std::string failures;
  bool listed = false;
  for (const auto& ep : endpoints) {
    if (refused(ep)) {
      failures += (failures.empty() ? "" : "; ") + ep + ": connection refused";
      continue;
    }
    try {
      list = pool.client(ep).member_list();
      listed = true;
      break;
    } catch (const Error& e) {
      failures += (failures.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (!listed) {
    throw Error(ErrorKind::kUnavailable, "no member answered MemberList: " + failures,
                "is etcd running? (etcdadm info lists the cluster through this member, then the ones known at join)");
  }
  ClusterInfo info;
  info.cluster_id = list.header().cluster_id();
  // Every member's Status at once: one that is down costs its dial timeout, not each in turn.
  std::vector<std::future<etcdserverpb::StatusResponse>> statuses;
  for (const auto& m : list.members()) {
    if (m.clienturls().empty()) {
      statuses.emplace_back();
      continue;
    }
    const std::string url = m.clienturls(0);
    EtcdClient* client = &pool.client(url);
    statuses.push_back(std::async(std::launch::async, [client, url, &refused] {
      if (refused(url)) throw Error(ErrorKind::kUnavailable, url + ": connection refused (its etcd is not running)");
      return client->status(url);
    }));
  }
  for (int i = 0; i < list.members_size(); ++i) {
    const auto& m = list.members(i);
    MemberInfo mi;
    mi.id = m.id();
    mi.name = m.name();
    mi.peer_urls.assign(m.peerurls().begin(), m.peerurls().end());
    mi.client_urls.assign(m.clienturls().begin(), m.clienturls().end());
    mi.learner = m.islearner();
    mi.local = m.id() == local_member_id;
    if (statuses[i].valid()) {
      try {
        auto st = statuses[i].get();
        mi.reachable = true;
        mi.version = st.version();
        mi.revision = st.header().revision();
        mi.db_size = st.dbsize();
        mi.db_size_in_use = st.dbsizeinuse();
        mi.db_size_quota = st.dbsizequota();
        mi.raft_index = st.raftindex();
        mi.raft_applied_index = st.raftappliedindex();
        mi.raft_term = st.raftterm();
        mi.storage_version = st.storageversion();
        if (st.has_downgradeinfo() && st.downgradeinfo().enabled())
          mi.downgrade_target = st.downgradeinfo().targetversion();
        mi.errors.assign(st.errors().begin(), st.errors().end());
        mi.leader = st.leader() == m.id();
        if (st.leader() != 0) info.leader_id = st.leader();
      } catch (const Error& e) {
        mi.status_error = e.what();
      }
    } else {
      mi.status_error = "not started (no client URL yet)";
    }
    info.members.push_back(std::move(mi));
  }
  for (auto& mi : info.members) mi.leader = mi.id == info.leader_id;
  return info;
}

}  // namespace

ClusterInfo cluster_info(const ConnectionConfig& connection, uint64_t local_member_id) {
  EtcdClientPool pool(connection);
  return survey(pool, connection.endpoints, local_member_id, false);
}

ClusterInfo cluster_info(EtcdClientPool& pool, const std::vector<std::string>& endpoints, uint64_t local_member_id) {
  return survey(pool, endpoints, local_member_id, false);
}

ClusterInfo cluster_info_failing_fast(const ConnectionConfig& connection, uint64_t local_member_id) {
  EtcdClientPool pool(connection);
  return survey(pool, connection.endpoints, local_member_id, true);
}

}  // namespace etcdadm

// Observations of one host's controller for the unit tests of decide() (controller/decide.h):
// host h1 of a store seeded for 3 members of etcd 3.5.17, and the pieces tests change from there.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "controller/decide.h"

namespace etcdadm::decide_test {

inline constexpr const char* kCa = "ca0000000000000000000000000000000000000000000000000000000000000a";

inline HostView host(const std::string& name, bool live = true, DataState data = DataState::kEmpty) {
  HostView h;
  h.record.name = name;
  h.record.peer_url = "https://10.0.0." + std::to_string(name.back() - '0') + ":2380";
  h.record.client_url = "https://10.0.0." + std::to_string(name.back() - '0') + ":2379";
  h.record.ca_sha256 = kCa;
  h.record.data = data;
  h.live = live;
  return h;
}

// Host h1 of a store seeded for 3 members of 3.5.17, nothing else yet.
inline Observation fresh(int hosts_live = 1) {
  Observation o;
  o.self = "h1";
  o.self_peer_url = "https://10.0.0.1:2380";
  o.self_client_url = "https://10.0.0.1:2379";
  o.ca_sha256 = kCa;
  o.store_url = "s3://b/c";
  o.spec = EtcdManagerClusterSpec{3, "3.5.17"};
  o.now_unix = 1800000000;
  // A removal of this host's member, where a test shows one, has been seen long enough to count
  // (ControllerDecide.ARemovalCountsOnlyOnceSeenForAWhile shows the wait before).
  o.removal_seen_seconds = kRemovalConfirmSeconds;
  for (int i = 1; i <= hosts_live; ++i) o.hosts.push_back(host("h" + std::to_string(i)));
  return o;
}

// Member `id` of host h<id>, answering with a leader unless `healthy` is false.
inline MemberInfo member(uint64_t id, const std::string& name, bool healthy = true, bool learner = false) {
  MemberInfo m;
  m.id = id;
  m.name = name;
  m.peer_urls = {"https://10.0.0." + std::to_string(id) + ":2380"};
  if (!name.empty()) m.client_urls = {"https://10.0.0." + std::to_string(id) + ":2379"};
  m.reachable = healthy;
  m.learner = learner;
  if (healthy) m.version = "3.5.17";  // the spec's (a member that does not answer tells none)
  return m;
}

inline ClusterView cluster_of(std::vector<MemberInfo> members, uint64_t leader) {
  ClusterView v;
  v.answered = true;
  v.info.cluster_id = 77;
  v.info.leader_id = leader;
  for (auto& m : members) m.leader = m.id == leader;
  v.info.members = std::move(members);
  return v;
}

// h1 as the leader's controller of a cluster that was created.
inline Observation acting(std::vector<MemberInfo> members, int hosts = 3) {
  Observation o = fresh(hosts);
  o.created_marker = true;
  o.local = LocalView{DataState::kMember, "etcd-auto-x", true, true, 1, 77};
  for (auto& h : o.hosts) h.record.data = DataState::kMember;
  o.cluster = cluster_of(std::move(members), 1);
  return o;
}

inline ClusterPlan plan_of(std::initializer_list<const char*> names) {
  ClusterPlan p;
  p.cluster_token = "etcd-auto-0123456789abcdef";
  p.etcd_version = "3.5.17";
  p.ca_sha256 = kCa;
  for (const char* n : names) {
    HostView h = host(n);
    p.members.push_back({h.record.name, h.record.peer_url, h.record.client_url});
  }
  return p;
}

}  // namespace etcdadm::decide_test

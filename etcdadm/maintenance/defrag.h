// Defragmenting a cluster's members without a write stall for the cluster: `etcdadm defrag` and the
// controller's defrag (docs/operations.md "Defragmentation").
//
// etcd's Defragment copies a member's whole db into a new file while the member serves nothing,
// and is not replicated: each member is defragmented on its own. A follower's defrag stalls only
// the clients connected to it (the others commit without it); the leader's would stall every
// write, so its leadership is moved to a healthy voter first. The order is learners, followers by
// name, the leader last; before each member every member must be healthy again (a defrag of one
// member while another is down would leave the cluster one failure from losing quorum), and a
// backup is taken before the first. `etcdctl defrag --cluster` instead defragments the members one
// after another in member-list order, leader included, with no health check between them.
//
// plan_defrag() is a pure function of what cluster_info saw (known-answer unit tests); run_defrag()
// carries a plan out, checking the cluster again before each member.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/maintenance/alarms.h"
#include "etcdadm/upgrade/upgrade.h"

namespace etcdadm {

// When a member's db is worth defragmenting: at least this share of its file free (db size minus
// the size in use, both from Status) and at least this many bytes. 0 and 0: every member asked for.
struct DefragRule {
  double min_free_fraction = 0;
  int64_t min_free_bytes = 0;
};

struct DefragPlanEntry {
  MemberInfo member;
  bool due = false;
  std::string why;  // "1.2 GiB of 1.6 GiB free (75%)", or why it is left as it is
};

struct DefragPlan {
  ClusterInfo info;
  std::vector<DefragPlanEntry> members;  // in the order to go: learners, followers by name, the leader
  // Why nothing may be defragmented now (empty: the plan may run): a member that does not answer
  // or sees no leader, a CORRUPT alarm.
  std::vector<std::string> problems;
  bool any_due() const;
};

// The members of `info` in defrag order, each judged by `rule`. `only` (names or hex IDs; empty:
// every member) limits which may be due; an unknown name is a problem.
DefragPlan plan_defrag(const ClusterInfo& info, const std::vector<MemberAlarm>& alarms, const DefragRule& rule,
                       const std::vector<std::string>& only = {});

struct DefragMemberResult {
  uint64_t id = 0;
  std::string name;
  bool led = false;  // it led when its turn came: leadership was moved first
  std::string leadership_moved_to;
  int64_t db_size_before = 0, in_use_before = 0;
  int64_t db_size_after = 0, in_use_after = 0;
  // The Defragment call: the time this member served no request (its clients' stall).
  std::chrono::milliseconds stalled{0};
  // Until it was healthy and had applied what the leader had committed when its defrag ended.
  std::chrono::milliseconds caught_up{0};
};

struct DefragOptions {
  ConnectionConfig connection;  // any members' client URLs (every member is found through MemberList)
  uint64_t local_member_id = 0;
  DefragRule rule;
  std::vector<std::string> only;
  PreChangeBackup backup;                    // taken before the first member; empty: none (said explicitly)
  std::chrono::seconds defrag_timeout{600};  // one member's Defragment (a GiB takes seconds to tens of seconds)
  std::chrono::seconds health_timeout{120};
  // Called after each member (the controller records an event per member).
  std::function<void(const DefragMemberResult&)> on_member;
};

struct DefragResult {
  DefragPlan plan;
  std::string backup;
  std::vector<DefragMemberResult> members;
};

// Checks, backs up, then defragments every due member in the plan's order. Throws (kUnavailable)
// when the plan has problems, before anything is done, or when the cluster stops being healthy
// part way: the message says which members were done.
DefragResult run_defrag(const DefragOptions& options);

}  // namespace etcdadm

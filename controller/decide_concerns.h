// The parts decide() is made of, one concern a file (decide_<concern>.cc), and the helpers they
// share (decide_common.cc). Each function is pure like decide(): it reads the Observation and says
// what to do, or nullopt when its concern asks nothing of this host now. The order they are tried
// in is decide()'s alone (controller/decide.cc).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "controller/decide.h"

namespace etcdadm::decide_parts {

// ---- shared (decide_common.cc) ----
Decision make(Step step, std::string reason, std::string command = {});
std::string names_of(const std::vector<PlannedMember>& members);
// "3.6.11" for "v3.6.11" and "3.6.11"; the text itself when it is no version (compared as is).
std::string version_text(const std::string& v);
const MemberInfo* healthy_member_with_client_url(const ClusterInfo& info);
// The hosts of the cluster's members, by member (nullptr where no host record names its peer URL).
std::vector<std::pair<const MemberInfo*, const HostRecord*>> member_hosts(const Observation& o);
// The hosts a new plan may list: live, holding this host's CA, by name; and what was left out.
struct Candidates {
  std::vector<const HostRecord*> hosts;
  std::string notes;
};
Candidates live_candidates(const Observation& o);
// Why no plan of `n` members for `what` is written yet (too few live hosts, or the settle window
// still open for the missing ones), or nullopt when one is.
std::optional<Decision> not_yet_planned(const Observation& o, const Candidates& c, int n, const std::string& what);
// The first `n` candidates as the plan's members, and who wrote it when.
void plan_members(const Observation& o, const Candidates& c, int n, ClusterPlan& plan);
// Rule Q's wait: the records this host cannot act on, named, and what a person does about them.
Decision unusable_records(const Observation& o, const std::vector<std::string>& problems);

// ---- creation (decide_creation.cc) ----
// This host's part of a plan: its member created from it while the planned cluster does not exist
// yet, or (started late) exists and still waits for this member as a voter.
std::optional<Decision> start_planned_member(const Observation& o, const MemberInfo* me);
// This host runs a member that no plan of these controllers made (its local planSequence is 0),
// and the store holds no plan and no created marker: a cluster made by hand (init/join, kubeadm)
// waits for `etcdadm auto adopt`, untouched.
std::optional<Decision> not_adopted(const Observation& o);
// The cluster a plan made (the store's, or the one this host's member recorded making it from) or
// adopted (this host's member in it) has a leader and the store lacks etcd-manager's
// etcd-cluster-created marker.
std::optional<Decision> mark_created(const Observation& o);
// No cluster answers: a new cluster planned when none was ever created and no host holds data,
// else what this host waits for; nullopt when the cluster answers.
std::optional<Decision> create_or_wait_for_cluster(const Observation& o, const std::string& token);

// ---- membership (decide_membership.cc) ----
// This host's member was removed from its cluster, or its data is lost: forget it or wait.
std::optional<Decision> forget_or_wait_for_replacement(const Observation& o, const MemberInfo* me);
// This host's member is down: start it (or wait while etcd refuses it on inconsistent data).
std::optional<Decision> start_stopped_member(const Observation& o);
// Added by the acting controller as a learner: this host joins.
std::optional<Decision> join_as_added(const Observation& o, const MemberInfo* me);
// What the controller next to the Raft leader does: one change at a time (membership, corruption,
// NOSPACE, then versions, maintenance and the CA), each only when the cluster is healthy enough.
Decision act_on_cluster(const Observation& o);
// Nothing for this host to do: a member the leader's controller acts for, or a spare.
Decision idle(const Observation& o, const MemberInfo* me);

// ---- restores (decide_restore.cc) ----
// The command queue (rules R1-R3): nullopt when it asks nothing of this host.
std::optional<Decision> run_queue(const Observation& o, const std::string& token);
// Rule 3: the total loss waits for a person, or (autoRestore) plans the newest backup's restore.
Decision after_total_loss(const Observation& o, const std::string& token);

// ---- a lost quorum (decide_quorum.cc) ----
// Rule L: the cluster answers without a leader for longer than kQuorumLostAfterSeconds: wait and
// say who answers; after the spec's replaceAfter, report it lost for good with what a person runs.
std::optional<Decision> lost_quorum(const Observation& o, const std::string& token);
// Rule RQ: a recover-quorum plan newer than this host's data: recover (the listed survivor) or set
// this host's data aside; nullopt when there is none or it has no part here.
std::optional<Decision> carry_out_quorum_recovery(const Observation& o);
// The plan (kPlanQuorumRecovery, written by this host, `furthest`'s) that makes survivor `furthest`
// a cluster of one, the other hosts setting their data aside to join it as spares.
Decision quorum_recovery_plan(const Observation& o, const QuorumLoss::Survivor& furthest, const std::string& token);

// ---- versions (decide_versions.cc) ----
// This host's part of a version change: its turn, or a change stopped part way; nullopt otherwise.
std::optional<Decision> change_own_version(const Observation& o, const MemberInfo* me);
// Acting: the rolling version change; nullopt when every voter runs the spec's version.
std::optional<Decision> change_versions(const Observation& o);

// ---- certificates and the CA (decide_ca.cc) ----
// Whether a spare holding CA `ca_sha256` may be added to this host's cluster: it holds this host's
// CA, or, during a rotation this host has not switched in yet, the rotation's new CA once every
// member's host re-issued its leaves by it (each side then verifies the other: the members' new
// leaves directly, the spare's through their cross certificates).
bool joinable_ca(const Observation& o, const std::string& ca_sha256);
std::optional<Decision> renew_own_certs(const Observation& o, const MemberInfo* me);
std::optional<Decision> rotate_own_ca(const Observation& o);
std::optional<Decision> rotate_cluster_ca(const Observation& o);

// ---- maintenance (decide_maintenance.cc) ----
// Acting: etcd's NOSPACE alarm recovered before anything else changes; nullopt without one.
std::optional<Decision> recover_space(const Observation& o);
// Acting: the members due a defrag; nullopt when none is.
std::optional<Decision> maintain(const Observation& o);

// ---- corruption (decide_corruption.cc) ----
// This host's removed member was found corrupt: its data set aside for a person.
std::optional<Decision> forget_corrupt_member(const Observation& o);
// Acting: voters etcd refused to start on inconsistent data (`unhealthy`: the unhealthy voters).
std::optional<Decision> act_on_refused_members(const Observation& o, const std::vector<const MemberInfo*>& unhealthy);
// Acting, every voter healthy: corrupt members and etcd's CORRUPT alarm.
std::optional<Decision> act_on_corruption(const Observation& o);

}  // namespace etcdadm::decide_parts

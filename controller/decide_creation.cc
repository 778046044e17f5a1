// Creating a cluster (rules 6-8 of controller/decide.cc): a plan written once by a quorum of live
// hosts, each planned host creating its member from it, and etcd-manager's created marker.
#include "common/text.h"
#include "controller/decide_concerns.h"

namespace etcdadm::decide_parts {

namespace {

// Hosts whose data says a cluster lives or lived on them (this one included).
std::vector<std::string> hosts_with_data(const Observation& o) {
  std::vector<std::string> out;
  if (o.local.data != DataState::kEmpty) out.push_back(o.self);
  for (const auto& h : o.hosts) {
    if (h.record.name != o.self && h.record.data != DataState::kEmpty)
      out.push_back(h.record.name + " (" + data_state_name(h.record.data) + ")");
  }
  return out;
}

// The next cluster's plan: the live hosts holding this host's CA, by name, at most the spec's
// count; or why there is none yet.
Decision plan_new_cluster(const Observation& o, const std::string& token) {
  const int n = o.spec->member_count;
  Candidates c = live_candidates(o);
  if (auto wait = not_yet_planned(o, c, n, "a new cluster")) return *wait;
  Decision d;
  d.step = Step::kPlanCluster;
  d.plan.sequence = 1;
  d.plan.purpose = "create";
  d.plan.cluster_token = token;
  d.plan.etcd_version = o.spec->etcd_version;
  plan_members(o, c, n, d.plan);
  d.reason = "no cluster was ever created from this store and " + std::to_string(c.hosts.size()) + " of " +
             std::to_string(n) + " hosts are live: planning a cluster of " + names_of(d.plan.members) + c.notes;
  d.command = "etcdadm init --initial-cluster " + d.plan.initial_cluster() + " --initial-cluster-token " + token +
              " (on each of " + names_of(d.plan.members) + ")";
  return d;
}

}  // namespace

std::optional<Decision> start_planned_member(const Observation& o, const MemberInfo* me) {
  if (!o.plan || !o.plan->member(o.self) || o.local.data != DataState::kEmpty) return std::nullopt;
  const bool before_creation = !o.cluster.answered && !o.created_marker;
  const bool late_starter = me != nullptr && me->name.empty() && !me->learner;
  if (!before_creation && !late_starter) return std::nullopt;
  if (o.plan->ca_sha256 != o.ca_sha256) {
    return make(Step::kWait,
                "plan " + std::to_string(o.plan->sequence) + " lists this host, but for another CA (" +
                    o.plan->ca_sha256.substr(0, 12) + "..., this host holds " + o.ca_sha256.substr(0, 12) + "...)",
                "copy the cluster's ca.crt and ca.key into this host's certs dir");
  }
  Decision d = make(Step::kStartPlannedMember,
                    std::string(late_starter ? "the cluster still waits for this member"
                                             : "plan " + std::to_string(o.plan->sequence) + " lists this host") +
                        ": creating its member (" + names_of(o.plan->members) + ")",
                    "etcdadm init --initial-cluster " + o.plan->initial_cluster() + " --initial-cluster-token " +
                        o.plan->cluster_token + " --name " + o.self);
  d.plan = *o.plan;
  return d;
}

std::optional<Decision> not_adopted(const Observation& o) {
  // A member a plan of these controllers made says so itself (its local planSequence), even once
  // that plan is gone from the store.
  if (o.local.data != DataState::kMember || o.created_marker || o.plan || o.local.plan_sequence > 0)
    return std::nullopt;
  Decision d =
      make(Step::kWait,
           "this host's member" + (o.local.cluster_id != 0 ? " (cluster " + id_hex(o.local.cluster_id) + ")" : "") +
               " was made without this store's controllers and is not adopted: nothing is done with it, not even a "
               "restart, until a person hands the cluster over",
           "etcdadm auto adopt --store " + o.store_url +
               " --certs-dir <the cluster CA's dir> (once every member's "
               "host runs etcdadm auto)");
  d.waits_on_a_person = true;
  return d;
}

std::optional<Decision> mark_created(const Observation& o) {
  if (o.local.data != DataState::kMember || !o.local.has_leader || o.created_marker) return std::nullopt;
  if (!o.plan && o.local.plan_sequence == 0) return std::nullopt;  // rule O's: a person adopts it
  if (o.plan && o.plan->purpose == "adopt" && o.local.cluster_id != o.plan->adopts_cluster_id) {
    Decision d = make(Step::kWait,
                      "plan " + std::to_string(o.plan->sequence) + " adopts cluster " +
                          id_hex(o.plan->adopts_cluster_id) + ", but this host's member belongs to cluster " +
                          id_hex(o.local.cluster_id) + ": not marking either created",
                      "etcdadm auto status --store " + o.store_url);
    d.waits_on_a_person = true;
    return d;
  }
  return make(Step::kMarkCreated,
              o.plan && o.plan->purpose == "adopt"
                  ? "the adopted cluster has a leader and the store does not say so yet"
                  : "the cluster has a leader and the store does not say it was created yet",
              "etcdadm etcd-manager get --store " + o.store_url + " (shows etcd-cluster-created)");
}

std::optional<Decision> create_or_wait_for_cluster(const Observation& o, const std::string& token) {
  const auto with_data = hosts_with_data(o);
  const bool cluster_anywhere = o.cluster.answered || !with_data.empty();
  if (!o.created_marker && !o.plan && !cluster_anywhere) return plan_new_cluster(o, token);
  if (o.cluster.answered) return std::nullopt;
  if (o.plan && !o.created_marker) {
    return make(Step::kIdle, "waiting for the members of plan " + std::to_string(o.plan->sequence) + " (" +
                                 names_of(o.plan->members) + ") to start and elect a leader");
  }
  if (!o.plan && !o.created_marker) {
    return make(Step::kWait, "no cluster answers and no plan exists, but hosts hold member data (" +
                                 join_list(with_data) + "): not planning a new cluster over it");
  }
  return make(Step::kWait, "no member of the cluster answers; hosts with member data: " + join_list(with_data) +
                               ": waiting for a quorum of them to come back");
}

}  // namespace etcdadm::decide_parts

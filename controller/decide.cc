#include "controller/decide.h"

#include <algorithm>

#include "common/timefmt.h"

namespace etcdadm {

const MemberView* ClusterView::by_peer_url(const std::string& url) const {
  for (const auto& m : members) {
    if (m.peer_url == url) return &m;
  }
  return nullptr;
}

const char* step_name(Step step) {
  switch (step) {
    case Step::kIdle: return "idle";
    case Step::kWait: return "wait";
    case Step::kStartLocalMember: return "start-member";
    case Step::kStartPlannedMember: return "create-member";
    case Step::kMarkCreated: return "mark-created";
    case Step::kPlanCluster: return "plan-cluster";
  }
  return "?";
}

int quorum_of(int members) { return members / 2 + 1; }

namespace {

Decision make(Step step, std::string reason, std::string command = {}) {
  Decision d;
  d.step = step;
  d.reason = std::move(reason);
  d.command = std::move(command);
  return d;
}

std::string names_of(const std::vector<PlannedMember>& members) {
  std::string out;
  for (const auto& m : members) out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

// Hosts whose data says a cluster lives or lived on them (this one included).
std::vector<std::string> hosts_with_data(const Observation& o) {
  std::vector<std::string> out;
  if (o.local.data != "empty") out.push_back(o.self);
  for (const auto& h : o.hosts) {
    if (h.record.name != o.self && h.record.data != "empty") out.push_back(h.record.name + " (" + h.record.data + ")");
  }
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The next cluster's plan: the live hosts holding this host's CA, by name, at most the spec's
// count; or why there is none yet.
Decision plan_new_cluster(const Observation& o, const std::string& token) {
  const int n = o.spec->member_count;
  const int q = quorum_of(n);
  std::vector<const HostRecord*> candidates;
  std::vector<std::string> other_ca, stale;
  for (const auto& h : o.hosts) {
    if (!h.live) {
      stale.push_back(h.record.name);
    } else if (h.record.ca_sha256 != o.ca_sha256) {
      other_ca.push_back(h.record.name);
    } else {
      candidates.push_back(&h.record);
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const HostRecord* a, const HostRecord* b) { return a->name < b->name; });
  std::string notes;
  if (!other_ca.empty()) notes += "; hosts with another CA, never planned with this one: " + joined(other_ca);
  if (!stale.empty()) notes += "; hosts not heard from lately: " + joined(stale);
  const int have = static_cast<int>(candidates.size());
  if (have < q) {
    return make(Step::kWait, std::to_string(have) + " of the spec's " + std::to_string(n) +
                                 " hosts are registered and live; a new cluster needs at least " + std::to_string(q) +
                                 ": start `etcdadm auto` on the other control-plane hosts" + notes);
  }
  if (have < n && o.quorum_seen_seconds < o.auto_spec.bootstrap_settle_seconds) {
    return make(Step::kIdle, std::to_string(have) + " of " + std::to_string(n) +
                                 " hosts are live: waiting up to " +
                                 std::to_string(o.auto_spec.bootstrap_settle_seconds - o.quorum_seen_seconds) +
                                 " s more for the others before planning the cluster with these" + notes);
  }
  Decision d;
  d.step = Step::kPlanCluster;
  d.plan.sequence = 1;
  d.plan.purpose = "create";
  d.plan.cluster_token = token;
  d.plan.etcd_version = o.spec->etcd_version;
  d.plan.ca_sha256 = o.ca_sha256;
  for (int i = 0; i < std::min(have, n); ++i) {
    d.plan.members.push_back({candidates[i]->name, candidates[i]->peer_url, candidates[i]->client_url});
  }
  d.plan.written_by = o.self;
  d.plan.written_unix = o.now_unix;
  d.reason = "no cluster was ever created from this store and " + std::to_string(have) + " of " + std::to_string(n) +
             " hosts are live: planning a cluster of " + names_of(d.plan.members) + notes;
  d.command = "etcdadm init --initial-cluster " + d.plan.initial_cluster() + " --initial-cluster-token " + token +
              " (on each of " + names_of(d.plan.members) + ")";
  return d;
}

}  // namespace

Decision decide(const Observation& o, const std::string& new_token) {
  if (o.pause) {
    std::string since = o.pause->since_unix > 0 ? " since " + format_rfc3339_seconds(std::chrono::system_clock::from_time_t(o.pause->since_unix)) : "";
    return make(Step::kWait,
                "paused by " + o.pause->by + since + (o.pause->reason.empty() ? "" : " (" + o.pause->reason + ")") +
                    ": no controller acts",
                "etcdadm auto resume --store " + o.store_url);
  }
  if (!o.spec) {
    return make(Step::kWait, "the store has no cluster spec (control/etcd-cluster-spec)",
                "etcdadm seed --store " + o.store_url + " --members 3 --version <etcd version>");
  }
  // Total loss: the store says a cluster was created, no member answers, and no host (this one
  // included) holds a member's data. Nothing here can bring the data back but a backup.
  const bool intact_anywhere = o.local.data == "member" || std::any_of(o.hosts.begin(), o.hosts.end(), [&](const HostView& h) {
                                 return h.record.name != o.self && h.record.data == "member";
                               });
  if (o.created_marker && !o.cluster.answered && !intact_anywhere) {
    return make(Step::kWait,
                "total loss: the store says a cluster was created (control/etcd-cluster-created), but no member answers "
                "and no host holds a member's data; a new, empty cluster is never created over it",
                "etcdadm etcd-manager restore-backup latest --store " + o.store_url +
                    " (then every host's controller restores the same backup)");
  }
  if (o.local.data == "lost") {
    return make(Step::kWait,
                "this host ran a member whose data is gone: it is never started on empty data (etcd would rejoin with a "
                "lost log); it waits until its old member is removed and it can join again",
                "etcdadm join --replace " + o.self + " <a member's client URL> (with this host's member flags)");
  }
  if (o.local.data == "member" && !o.local.etcd_running) {
    return make(Step::kStartLocalMember, "this host's member is not running", "etcdadm member restart (or start its service)");
  }

  // This host's part of a plan: its member starts from it while the cluster it plans does not
  // exist yet, or (started late) exists and still waits for this member.
  if (o.plan && o.plan->member(o.self) && o.local.data == "empty") {
    const MemberView* me = o.cluster.answered ? o.cluster.by_peer_url(o.self_peer_url) : nullptr;
    const bool before_creation = !o.cluster.answered && !o.created_marker;
    const bool late_starter = me != nullptr && me->name.empty();
    if (before_creation || late_starter) {
      if (o.plan->ca_sha256 != o.ca_sha256) {
        return make(Step::kWait, "plan " + std::to_string(o.plan->sequence) + " lists this host, but for another CA (" +
                                     o.plan->ca_sha256.substr(0, 12) + "..., this host holds " + o.ca_sha256.substr(0, 12) +
                                     "...)",
                    "copy the cluster's ca.crt and ca.key into this host's certs dir");
      }
      Decision d = make(Step::kStartPlannedMember,
                        std::string(late_starter ? "the cluster still waits for this member" : "plan " + std::to_string(o.plan->sequence) + " lists this host") +
                            ": creating its member (" + names_of(o.plan->members) + ")",
                        "etcdadm init --initial-cluster " + o.plan->initial_cluster() + " --initial-cluster-token " +
                            o.plan->cluster_token + " --name " + o.self);
      d.plan = *o.plan;
      return d;
    }
  }

  if (o.local.data == "member" && o.local.has_leader && !o.created_marker) {
    return make(Step::kMarkCreated, "the cluster has a leader and the store does not say it was created yet",
                "etcdadm etcd-manager get --store " + o.store_url + " (shows etcd-cluster-created)");
  }

  const auto with_data = hosts_with_data(o);
  const bool cluster_anywhere = o.cluster.answered || !with_data.empty();
  if (!o.created_marker && !o.plan && !cluster_anywhere) return plan_new_cluster(o, new_token);

  if (!o.cluster.answered) {
    if (o.plan && !o.created_marker) {
      return make(Step::kIdle, "waiting for the members of plan " + std::to_string(o.plan->sequence) + " (" +
                                   names_of(o.plan->members) + ") to start and elect a leader");
    }
    if (!o.plan && !o.created_marker) {
      return make(Step::kWait, "no cluster answers and no plan exists, but hosts hold member data (" + joined(with_data) +
                                   "): not planning a new cluster over it");
    }
    return make(Step::kWait, "no member of the cluster answers; hosts with member data: " + joined(with_data) +
                                 ": waiting for a quorum of them to come back");
  }
  if (o.local.data == "member") {
    return make(Step::kIdle, "member " + std::to_string(o.local.member_id) + " of a cluster of " +
                                 std::to_string(o.cluster.members.size()) + " (spec: " +
                                 std::to_string(o.spec->member_count) + ")");
  }
  return make(Step::kIdle, "spare host: the cluster has " + std::to_string(o.cluster.members.size()) +
                               " members, the spec asks for " + std::to_string(o.spec->member_count));
}

}  // namespace etcdadm

// The helpers decide()'s parts share (controller/decide_concerns.h).
#include <algorithm>

#include "common/text.h"
#include "controller/decide_concerns.h"
#include "etcd/etcd_version.h"

namespace etcdadm {

int quorum_of(int members) { return members / 2 + 1; }

int64_t held_age(int64_t writer_age, int64_t seen) { return seen < 0 ? writer_age : std::min(writer_age, seen); }
int64_t window_age(int64_t writer_age, int64_t seen) { return seen < 0 ? writer_age : std::max(writer_age, seen); }

const HostView* host_refusing_member(const Observation& o, uint64_t member_id) {
  for (const auto& h : o.hosts) {
    if (h.live && member_id != 0 && h.record.member_id == member_id &&
        h.record.etcd_refused == kEtcdRefusedInconsistent)
      return &h;
  }
  return nullptr;
}

bool local_member_removed(const Observation& o) {
  if (!o.cluster.answered || o.local.cluster_id == 0 || o.local.cluster_id != o.cluster.info.cluster_id) return false;
  const MemberInfo* listed = find_member_by_peer_url(o.cluster.info, o.self_peer_url);
  // Another member at this host's peer URL is a learner added for it again after its own member was
  // removed (the acting controller can do both between two of this host's rounds): the data here is
  // still the removed member's, which etcd refuses to start as the new one.
  return listed == nullptr || (o.local.member_id != 0 && listed->id != o.local.member_id);
}

bool is_acting(const Observation& o) {
  return o.cluster.answered && o.local.data == DataState::kMember && o.local.member_id != 0 &&
         o.cluster.info.leader_id == o.local.member_id;
}

namespace decide_parts {

Decision make(Step step, std::string reason, std::string command) {
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

std::string version_text(const std::string& v) {
  auto parsed = EtcdVersion::parse(v);
  return parsed ? parsed->str() : v;
}

const MemberInfo* healthy_member_with_client_url(const ClusterInfo& info) {
  for (const auto& m : info.members) {
    if (member_healthy(m) && !m.client_urls.empty() && !m.learner) return &m;
  }
  return nullptr;
}

std::vector<std::pair<const MemberInfo*, const HostRecord*>> member_hosts(const Observation& o) {
  std::vector<std::pair<const MemberInfo*, const HostRecord*>> out;
  for (const auto& m : o.cluster.info.members) {
    const HostRecord* host = nullptr;
    for (const auto& h : o.hosts) {
      if (std::find(m.peer_urls.begin(), m.peer_urls.end(), h.record.peer_url) != m.peer_urls.end()) host = &h.record;
    }
    out.emplace_back(&m, host);
  }
  return out;
}

Candidates live_candidates(const Observation& o) {
  Candidates c;
  std::vector<std::string> other_ca, stale;
  for (const auto& h : o.hosts) {
    if (!h.live) {
      stale.push_back(h.record.name);
    } else if (h.record.ca_sha256 != o.ca_sha256) {
      other_ca.push_back(h.record.name);
    } else {
      c.hosts.push_back(&h.record);
    }
  }
  std::sort(c.hosts.begin(), c.hosts.end(), [](const HostRecord* a, const HostRecord* b) { return a->name < b->name; });
  if (!other_ca.empty()) c.notes += "; hosts with another CA, never planned with this one: " + join_list(other_ca);
  if (!stale.empty()) c.notes += "; hosts not heard from lately: " + join_list(stale);
  return c;
}

std::optional<Decision> not_yet_planned(const Observation& o, const Candidates& c, int n, const std::string& what) {
  const int q = quorum_of(n);
  const int have = static_cast<int>(c.hosts.size());
  if (have < q) {
    return make(Step::kWait, std::to_string(have) + " of the spec's " + std::to_string(n) +
                                 " hosts are registered and live; " + what + " needs at least " + std::to_string(q) +
                                 ": start `etcdadm auto` on the other control-plane hosts" + c.notes);
  }
  if (have < n && o.quorum_seen_seconds < o.auto_spec.bootstrap_settle_seconds) {
    return make(Step::kIdle, std::to_string(have) + " of " + std::to_string(n) + " hosts are live: waiting up to " +
                                 std::to_string(o.auto_spec.bootstrap_settle_seconds - o.quorum_seen_seconds) +
                                 " s more for the others before planning " + what + " with these" + c.notes);
  }
  return std::nullopt;
}

void plan_members(const Observation& o, const Candidates& c, int n, ClusterPlan& plan) {
  for (int i = 0; i < std::min(static_cast<int>(c.hosts.size()), n); ++i) {
    plan.members.push_back({c.hosts[i]->name, c.hosts[i]->peer_url, c.hosts[i]->client_url});
  }
  plan.ca_sha256 = o.ca_sha256;
  plan.written_by = o.self;
  plan.written_unix = o.now_unix;
}

Decision unusable_records(const Observation& o, const std::vector<std::string>& problems) {
  std::string what;
  for (const auto& p : problems) what += (what.empty() ? "" : "; ") + p;
  return make(Step::kWait,
              "no controller acts on a shared record it cannot read or obey (this host only keeps its own member "
              "running): " +
                  what,
              "etcdadm auto status --store " + o.store_url +
                  " names each; fix or remove the record (a spec: etcdadm seed --store " + o.store_url +
                  " --members N --version X.Y.Z; a command: etcdadm etcd-manager delete-command KEY)");
}

}  // namespace decide_parts
}  // namespace etcdadm

#include "etcdadm/maintenance/defrag.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "common/text.h"
#include "etcd/client_pool.h"
#include "etcdadm/member_health.h"
#include "etcdadm/quorum.h"

namespace etcdadm {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::chrono::milliseconds since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t);
}

std::string free_text(const MemberInfo& m) {
  const int64_t free = std::max<int64_t>(0, m.db_size - m.db_size_in_use);
  const double share = m.db_size > 0 ? 100.0 * static_cast<double>(free) / static_cast<double>(m.db_size) : 0;
  return fmt::format("{} of {} free ({:.0f}%)", human_bytes(free), human_bytes(m.db_size), share);
}

// Learners, then followers, each by name; the leader last.
int order_class(const MemberInfo& m, uint64_t leader_id) {
  if (m.learner) return 0;
  return m.id == leader_id || m.leader ? 2 : 1;
}

// Why the cluster may not be defragmented now (empty: it may).
std::vector<std::string> defrag_problems(const ClusterInfo& info, const std::vector<MemberAlarm>& alarms) {
  std::vector<std::string> out;
  for (const auto& m : info.members) {
    if (!m.reachable) {
      out.push_back("member " + member_label(m) + " does not answer" +
                    (m.status_error.empty() ? "" : " (" + m.status_error + ")"));
    } else if (!member_healthy(m)) {
      out.push_back("member " + member_label(m) + " sees no leader");
    }
  }
  for (const auto& a : alarms) {
    if (a.alarm == "CORRUPT") {
      out.push_back(fmt::format("etcd raised CORRUPT on member {:x}: a corrupt member is replaced, not defragmented",
                                a.member_id));
    }
  }
  return out;
}

}  // namespace

bool DefragPlan::any_due() const {
  return std::any_of(members.begin(), members.end(), [](const DefragPlanEntry& e) { return e.due; });
}

DefragPlan plan_defrag(const ClusterInfo& info, const std::vector<MemberAlarm>& alarms, const DefragRule& rule,
                       const std::vector<std::string>& only) {
  DefragPlan plan;
  plan.info = info;
  plan.problems = defrag_problems(info, alarms);
  std::set<uint64_t> asked;
  for (const auto& name : only) {
    const MemberInfo* m = find_member(info, name);
    if (m == nullptr) {
      plan.problems.push_back("no member is named " + name + " (etcdadm info lists them)");
    } else {
      asked.insert(m->id);
    }
  }
  for (const auto& m : info.members) {
    DefragPlanEntry e;
    e.member = m;
    const int64_t free = std::max<int64_t>(0, m.db_size - m.db_size_in_use);
    const double share = m.db_size > 0 ? static_cast<double>(free) / static_cast<double>(m.db_size) : 0;
    if (!only.empty() && asked.count(m.id) == 0) {
      e.why = "not asked for";
    } else if (!m.reachable) {
      e.why = "does not answer";
    } else if (share < rule.min_free_fraction || free < rule.min_free_bytes) {
      e.why = free_text(m) + fmt::format(": under the threshold ({:.0f}% and {})", 100 * rule.min_free_fraction,
                                         human_bytes(rule.min_free_bytes));
    } else {
      e.due = true;
      e.why = free_text(m);
    }
    plan.members.push_back(std::move(e));
  }
  std::stable_sort(plan.members.begin(), plan.members.end(), [&](const DefragPlanEntry& a, const DefragPlanEntry& b) {
    int ca = order_class(a.member, info.leader_id), cb = order_class(b.member, info.leader_id);
    if (ca != cb) return ca < cb;
    return a.member.name < b.member.name;
  });
  return plan;
}

namespace {

class DefragRun {
 public:
  explicit DefragRun(const DefragOptions& o) : o_(o), pool_(o.connection) {}

  DefragResult run() {
    survey();
    result_.plan = plan_defrag(info_, alarms_, o_.rule, o_.only);
    if (!result_.plan.problems.empty()) {
      throw Error(ErrorKind::kUnavailable, "not defragmenting: " + join_list(result_.plan.problems),
                  "a defrag stops one member's service for a while: every member must be healthy first");
    }
    if (!result_.plan.any_due()) return result_;
    if (o_.backup) {
      EtcdClient cluster(with_member_endpoints());
      result_.backup = o_.backup(cluster);
    }
    for (const auto& e : result_.plan.members) {
      if (!e.due) continue;
      result_.members.push_back(defragment(e.member));
      if (o_.on_member) o_.on_member(result_.members.back());
    }
    return result_;
  }

 private:
  void survey() {
    info_ = cluster_info(pool_, with_member_endpoints().endpoints, o_.local_member_id);
    EtcdClient cluster(with_member_endpoints());
    alarms_ = list_alarms(cluster);
  }

  // The members as last surveyed, after the endpoints the caller gave.
  ConnectionConfig with_member_endpoints() const { return etcdadm::with_member_endpoints(o_.connection, info_); }

  std::string done_so_far() const {
    if (result_.members.empty()) return "no member was defragmented";
    std::string names;
    for (const auto& r : result_.members) names += (names.empty() ? "" : ", ") + r.name;
    return "defragmented so far: " + names;
  }

  const MemberInfo* current(uint64_t id) const {
    for (const auto& m : info_.members) {
      if (m.id == id) return &m;
    }
    return nullptr;
  }

  DefragMemberResult defragment(const MemberInfo& planned) {
    // The cluster again, as it is now: minutes may have passed since the plan.
    survey();
    auto problems = defrag_problems(info_, alarms_);
    if (!problems.empty()) {
      throw Error(ErrorKind::kUnavailable,
                  "stopped before member " + member_label(planned) + ": " + join_list(problems) + "; " + done_so_far(),
                  "run it again once every member is healthy (members already done are skipped by a threshold)");
    }
    const MemberInfo* m = current(planned.id);
    if (m == nullptr || m->client_urls.empty()) {
      throw Error(ErrorKind::kUnavailable, "member " + member_label(planned) + " left the cluster; " + done_so_far());
    }
    const std::string endpoint = m->client_urls.front();
    DefragMemberResult r;
    r.id = m->id;
    r.name = m->name;
    r.led = m->leader || m->id == info_.leader_id;
    if (r.led) r.leadership_moved_to = move_leadership(*m);

    EtcdClient& client = pool_.client(endpoint);
    auto before = client.status(endpoint);
    r.db_size_before = before.dbsize();
    r.in_use_before = before.dbsizeinuse();
    spdlog::info("defragmenting member {}: {} of {} in use", member_label(*m), human_bytes(r.in_use_before),
                 human_bytes(r.db_size_before));
    auto t0 = Clock::now();
    client.defragment(endpoint, o_.defrag_timeout);
    r.stalled = since(t0);
    auto t1 = Clock::now();
    wait_caught_up(
        client, endpoint, "member " + member_label(*m) + " to catch up after its defrag",
        [&](uint64_t id) { return client_url_of(id); }, o_.health_timeout, [] { return true; }, "");
    r.caught_up = since(t1);
    auto after = client.status(endpoint);
    r.db_size_after = after.dbsize();
    r.in_use_after = after.dbsizeinuse();
    spdlog::info("member {} defragmented in {} ms: {} -> {} (caught up {} ms later)", member_label(*m),
                 r.stalled.count(), human_bytes(r.db_size_before), human_bytes(r.db_size_after), r.caught_up.count());
    return r;
  }

  // Hands the leadership of `leader` to the healthy voter the furthest along, so that its defrag
  // stalls no write. Returns that voter's name ("" when it is the only voter: its defrag then
  // stalls the cluster, and says so).
  std::string move_leadership(const MemberInfo& leader) {
    const MemberInfo* best = leadership_successor(info_, leader.id);
    if (best == nullptr) {
      spdlog::warn("member {} is the only voter: writes wait while it is defragmented", member_label(leader));
      return "";
    }
    const std::string endpoint = leader.client_urls.front();
    hand_leadership(pool_.client(endpoint), endpoint, member_label(leader), best->id, member_label(*best), "");
    spdlog::info("leadership moved from {} to {} before its defrag", member_label(leader), member_label(*best));
    return best->name;
  }

  std::string client_url_of(uint64_t id) const {
    const MemberInfo* m = current(id);
    return m == nullptr || m->client_urls.empty() ? std::string() : m->client_urls.front();
  }

  const DefragOptions& o_;
  EtcdClientPool pool_;
  ClusterInfo info_;
  std::vector<MemberAlarm> alarms_;
  DefragResult result_;
};

}  // namespace

DefragResult run_defrag(const DefragOptions& options) { return DefragRun(options).run(); }

}  // namespace etcdadm

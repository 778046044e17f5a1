#include "etcdadm/member_remove.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "common/error.h"
#include "common/retry.h"
#include "etcdadm/member_health.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

}  // namespace

const MemberInfo& checked_removal(const ClusterInfo& info, const std::string& target, bool force, QuorumCheck& quorum) {
  const MemberInfo* x = find_member(info, target);
  if (x == nullptr) {
    std::string names;
    for (const auto& m : info.members) names += (names.empty() ? "" : ", ") + m.name + fmt::format(" ({:x})", m.id);
    throw Error(ErrorKind::kNotFound, "the cluster has no member " + target, "its members: " + names);
  }
  quorum = check_remove(info, x->id);
  if (member_healthy(*x) && !force) {
    throw Error(ErrorKind::kInvalidArgument,
                "member " + target + " is healthy (it answers at " + x->client_urls.front() +
                    "): refusing to remove a running member",
                "to take a healthy member out, run `etcdadm reset` on its host; pass --force to remove it from here "
                "anyway (its etcd stops once it learns of the removal)");
  }
  if (!quorum.safe) {
    throw Error(ErrorKind::kUnavailable,
                "removing member " + target + " would leave the cluster without quorum: " + quorum.explanation,
                "bring the other members back first (etcdadm info); a cluster that lost quorum needs the "
                "disaster-recovery runbook (docs/operations.md)");
  }
  return *x;
}

void remove_member_through(EtcdClient& remover, uint64_t id, const std::string& name) {
  auto deadline = Clock::now() + 60s;
  for (;;) {
    try {
      remover.member_remove(id);
      break;
    } catch (const Error& e) {
      // The removal may have been applied although the answer was lost: look before retrying.
      try {
        auto now = remover.member_list();
        bool still_there = false;
        for (const auto& x : now.members()) still_there = still_there || x.id() == id;
        if (!still_there) break;
      } catch (const Error&) {
      }
      bool transient = e.mentions("unhealthy cluster") || e.mentions("not enough started members") || is_retryable(e);
      if (!transient) throw;
      if (Clock::now() >= deadline) {
        throw Error(ErrorKind::kUnavailable,
                    "etcd refuses to remove member " + name +
                        ": the remaining members would not form a healthy quorum (" + e.what() + ")",
                    "check the other members with `etcdadm info`; a cluster that lost quorum needs the "
                    "disaster-recovery runbook (docs/operations.md)");
      }
      spdlog::info("cluster not ready for the removal yet ({}); retrying", e.what());
      std::this_thread::sleep_for(1s);
    }
  }
  spdlog::info("removed member {} (ID {:x}) from the cluster", name, id);
}

std::vector<std::string> client_urls_except(const ClusterInfo& info, uint64_t id) {
  std::vector<std::string> urls;
  for (const auto& x : info.members) {
    if (x.id == id) continue;
    for (const auto& u : x.client_urls) urls.push_back(u);
  }
  return urls;
}

MemberRemoveResult run_member_remove(const MemberRemoveOptions& o) {
  const MemberConfig& m = o.member;
  ClusterInfo info = cluster_info(connection_to(m, cluster_endpoints_of(m, o.endpoints)), 0);
  MemberRemoveResult r;
  const MemberInfo& x = checked_removal(info, o.target, o.force, r.quorum);
  r.id = x.id;
  r.name = x.name;
  spdlog::info("checked: {}", r.quorum.explanation);
  EtcdClient remover(connection_to(m, client_urls_except(info, x.id)));
  remove_member_through(remover, x.id, x.name.empty() ? o.target : x.name);
  return r;
}

}  // namespace etcdadm

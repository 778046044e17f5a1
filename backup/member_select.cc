#include "backup/member_select.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "common/error.h"

namespace etcdadm {

MemberChoice choose_member(EtcdClient& client, const std::string& preferred) {
  std::vector<std::string> endpoints = client.config().endpoints;
  if (!preferred.empty()) {
    bool listed = false;
    for (const auto& e : endpoints) listed = listed || e == preferred;
    if (!listed) endpoints.insert(endpoints.begin(), preferred);
  }
  std::vector<MemberChoice> healthy;
  std::string problems;
  ErrorKind worst = ErrorKind::kUnavailable;
  std::string hint;
  for (const auto& ep : endpoints) {
    try {
      MemberChoice c{ep, client.status(ep)};
      // NOSPACE is the cluster's, not the member's: its data is whole, and a backup is what a
      // person (or `alarm recover`) wants first. Any other error (CORRUPT, no leader) rules it out.
      std::string refused;
      for (const auto& e : c.status.errors()) {
        if (e.find("alarm:NOSPACE") == std::string::npos && refused.empty()) refused = e;
      }
      if (!refused.empty()) {
        problems += "\n  " + ep + ": member reports errors: " + refused;
        continue;
      }
      if (c.status.leader() == 0) {
        problems += "\n  " + ep + ": member has no leader";
        continue;
      }
      healthy.push_back(std::move(c));
    } catch (const Error& e) {
      problems += "\n  " + std::string(e.what());
      // Keep the most telling kind (TLS or auth beats plain unavailability) and its hint.
      if (e.kind() == ErrorKind::kTls || e.kind() == ErrorKind::kAuth || hint.empty()) {
        worst = e.kind();
        hint = e.hint();
      }
    }
  }
  if (healthy.empty()) {
    throw Error(worst, "no healthy etcd member to take a snapshot from:" + problems, hint);
  }
  if (!problems.empty()) spdlog::warn("some members were skipped:{}", problems);
  for (auto& c : healthy) {
    if (c.endpoint == preferred) return c;
  }
  if (!preferred.empty()) spdlog::warn("preferred member {} is not healthy; using another", preferred);
  const MemberChoice* best = &healthy.front();
  for (const auto& c : healthy) {
    if (c.status.raftindex() > best->status.raftindex()) best = &c;
  }
  return *best;
}

}  // namespace etcdadm

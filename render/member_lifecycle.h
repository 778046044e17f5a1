// This host's member through its lifecycle: `init` and `join` (the phases run, and how to add the
// next member), `reset`, `info` (the member and the cluster it is in), and `member remove`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "etcdadm/lifecycle/init_join.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/lifecycle/reset.h"
#include "etcdadm/member_remove.h"
#include "restore/recover.h"

namespace etcdadm::render {

// `verb`: "Initialized" or "Joined"; `member`: the member the phases ran for.
nlohmann::json lifecycle_result_json(const MemberConfig& member, const LifecycleResult& r);
std::string lifecycle_result_text(const char* verb, const MemberConfig& member, const LifecycleResult& r);

std::string reset_result_text(const MemberConfig& member, const ResetResult& r);

// `etcdadm recover`: which data the new cluster serves, what was set aside and removed, and the
// commands that grow it back.
std::string recover_result_text(const MemberConfig& member, const RecoverResult& r);

// `local`: this host's member as its state file records it.
nlohmann::json cluster_info_json(const MemberConfig& local, const ClusterInfo& info);
std::string cluster_info_text(const MemberConfig& local, const ClusterInfo& info);

nlohmann::json member_removed_json(const MemberRemoveResult& r);
std::string member_removed_text(const MemberRemoveResult& r);

}  // namespace etcdadm::render

#include "render/member_lifecycle.h"

#include <fmt/format.h>
#include <fmt/printf.h>

#include "common/text.h"
#include "etcdadm/quorum.h"

namespace etcdadm::render {

nlohmann::json lifecycle_result_json(const MemberConfig& member, const LifecycleResult& r) {
  nlohmann::json j = {{"name", member.name},
                      {"memberId", r.member_id == 0 ? nlohmann::json(nullptr) : nlohmann::json(id_hex(r.member_id))},
                      {"clientUrl", r.client_url},
                      {"phases", r.phases_run}};
  if (!r.join_command.empty()) j["joinCommand"] = r.join_command;
  return j;
}

std::string lifecycle_result_text(const char* verb, const MemberConfig& member, const LifecycleResult& r) {
  std::string phases;
  for (const auto& p : r.phases_run) phases += (phases.empty() ? "" : ", ") + p;
  if (r.phases_run.size() == 1) return "Phase " + phases + " done for member " + member.name + "\n";
  std::string out =
      std::string(verb) + " member " + member.name + " at " + r.client_url + " (phases: " + phases + ")\n";
  if (r.member_id != 0) out += "  member ID " + fmt::format("{:x}", r.member_id) + "\n";
  out += "  etcdctl: " + member.etcdctl_wrapper() + " member list\n";
  if (!r.join_command.empty() && r.phases_run.size() > 1) {
    out += "\nTo add a member: copy " + member.ca_cert() + " and " + member.ca_key() +
           " to the new host's certs dir (key mode 0600), then run there:\n  " + r.join_command + "\n";
  }
  return out;
}

std::string reset_result_text(const MemberConfig& member, const ResetResult& r) {
  std::string out = "Reset member " + member.name + (r.member_removed ? " (removed from the cluster)" : "") + "\n";
  if (!r.data_set_aside.empty()) out += "  data dir set aside as " + r.data_set_aside + "\n";
  for (const auto& p : r.removed_paths) out += "  removed " + p + "\n";
  return out;
}

std::string recover_result_text(const MemberConfig& member, const RecoverResult& r) {
  std::string out;
  if (r.source == RecoverResult::Source::kChangeLog) {
    out = "Recovered: member " + member.name + " (" + id_hex(r.member_id) + ") is a new cluster of one (cluster " +
          id_hex(r.cluster_id) + ", was " + id_hex(r.previous_cluster_id) +
          ") from the change log, which reached further than the member: its db plus " + std::to_string(r.log_records) +
          " revisions of the log, to revision " + std::to_string(r.log_reaches) + " (the member had served " +
          std::to_string(r.revision_before) + "); it serves revision " + std::to_string(r.revision) + "\n";
    out += "  revision: " + r.revision_bump.explanation() + "\n";
  } else {
    out = "Recovered: member " + member.name + " (" + id_hex(r.member_id) +
          ") is a cluster of one now, from its own data (cluster " + id_hex(r.cluster_id) + " kept): revision " +
          std::to_string(r.revision) + ", it served " + std::to_string(r.revision_before) +
          " before; every write it had committed is kept\n";
    if (r.log_reaches > 0) {
      out += "  the change log in the store reaches revision " + std::to_string(r.log_reaches) +
             ", not past the member's\n";
    }
  }
  if (!r.log_not_taken.empty()) out += "  not taken: " + r.log_not_taken + "\n";
  out += "  its data dir as it was: " + r.set_aside + " (never deleted by etcdadm)\n";
  for (const auto& why : r.overridden) out += "  --force overrode: " + why + "\n";
  if (r.removed.empty()) return out;
  std::string names;
  for (const auto& lost : r.removed) names += (names.empty() ? "" : ", ") + lost.name;
  out += "  removed from the membership: " + names + "\n";
  out +=
      "Grow it back: on each of those hosts, with this cluster's ca.crt and ca.key in its certs dir (what is "
      "left of its old member first reset with `etcdadm reset --skip-remove-member --keep-data`, which sets its "
      "data dir aside):\n";
  for (const auto& lost : r.removed) {
    out += "  etcdadm join " + r.client_url + (lost.name.empty() ? "" : " --name " + lost.name) + "\n";
  }
  return out;
}

nlohmann::json cluster_info_json(const MemberConfig& m, const ClusterInfo& info) {
  nlohmann::json members = nlohmann::json::array();
  for (const auto& x : info.members) {
    nlohmann::json j = {{"memberId", id_hex(x.id)},    {"name", x.name},          {"peerUrls", x.peer_urls},
                        {"clientUrls", x.client_urls}, {"learner", x.learner},    {"local", x.local},
                        {"leader", x.leader},          {"reachable", x.reachable}};
    if (x.reachable) {
      j.update({{"version", x.version},
                {"dbSize", x.db_size},
                {"dbSizeInUse", x.db_size_in_use},
                {"raftIndex", x.raft_index},
                {"raftTerm", x.raft_term},
                {"errors", x.errors}});
    } else {
      j["error"] = x.status_error;
    }
    members.push_back(j);
  }
  return {{"clusterId", fmt::format("{:x}", info.cluster_id)},
          {"leaderId", fmt::format("{:x}", info.leader_id)},
          {"local",
           {{"name", m.name},
            {"clientUrl", m.client_url()},
            {"dataDir", m.data_dir},
            {"certsDir", m.certs_dir},
            {"initSystem", init_system_name(m.init_system)}}},
          {"members", members}};
}

std::string cluster_info_text(const MemberConfig& m, const ClusterInfo& info) {
  std::string out = "Local member " + m.name + " at " + m.client_url() + " (init system " +
                    init_system_name(m.init_system) + ", data dir " + m.data_dir + ")\n";
  out +=
      "Cluster " + fmt::format("{:x}", info.cluster_id) + ", " + std::to_string(info.members.size()) + " member(s)\n\n";
  out += fmt::sprintf("%-16s  %-12s  %-8s  %-8s  %-9s  %-10s  %-12s  %s\n", "ID", "NAME", "STATUS", "ROLE", "VERSION",
                      "DB SIZE", "RAFT INDEX", "CLIENT URLS");
  for (const auto& x : info.members) {
    const std::string role = member_role(x);
    std::string urls;
    for (const auto& u : x.client_urls) urls += (urls.empty() ? "" : ",") + u;
    std::string name = x.name.empty() ? "(unstarted)" : x.name + (x.local ? "*" : "");
    out += fmt::sprintf("%-16s  %-12s  %-8s  %-8s  %-9s  %-10s  %-12s  %s\n", fmt::format("{:x}", x.id), name,
                        x.reachable ? "healthy" : "DOWN", role, x.reachable ? x.version : "-",
                        x.reachable ? human_bytes(static_cast<uint64_t>(x.db_size)) : "-",
                        x.reachable ? std::to_string(x.raft_index) : "-", urls);
    for (const auto& e : x.errors) out += fmt::sprintf("    alarm/error: %s\n", e);
    if (!x.reachable) out += fmt::sprintf("    %s\n", x.status_error);
  }
  return out;
}

nlohmann::json member_removed_json(const MemberRemoveResult& r) {
  return {{"memberId", id_hex(r.id)}, {"name", r.name}, {"quorum", r.quorum.explanation}};
}

std::string member_removed_text(const MemberRemoveResult& r) {
  return "Removed member " + r.name + " (" + fmt::format("{:x}", r.id) + ") from the cluster\n" +
         "  checked: " + r.quorum.explanation + "\n";
}

}  // namespace etcdadm::render

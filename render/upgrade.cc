#include "render/upgrade.h"

#include <fmt/format.h>
#include <fmt/printf.h>

#include "common/text.h"
#include "etcdadm/quorum.h"

namespace etcdadm::render {

nlohmann::json upgrade_plan_json(const UpgradePlan& plan, const std::string& backup_note) {
  nlohmann::json members = nlohmann::json::array();
  int order = 0;
  for (const auto& e : plan.members) {
    members.push_back({{"order", e.step.kind == VersionStepKind::kSame ? 0 : ++order},
                       {"memberId", id_hex(e.member.id)},
                       {"name", e.member.name},
                       {"leader", e.member.leader},
                       {"learner", e.member.learner},
                       {"reachable", e.member.reachable},
                       {"version", e.member.version},
                       {"step", version_step_name(e.step.kind)},
                       {"allowed", e.step.allowed},
                       {"reason", e.step.reason},
                       {"supportedPath", e.step.supported_path},
                       {"enableDowngrade", e.step.enable_downgrade},
                       {"quorumSafe", e.quorum.safe},
                       {"quorum", e.quorum.explanation}});
  }
  return {{"clusterId", fmt::format("{:x}", plan.survey.info.cluster_id)},
          {"clusterVersion", plan.survey.cluster_version ? plan.survey.cluster_version->str() : ""},
          {"downgradeTarget", plan.survey.downgrade_target ? plan.survey.downgrade_target->str() : ""},
          {"target", plan.target.str()},
          {"allowed", plan.allowed},
          {"problems", plan.problems},
          {"backup", backup_note},
          {"members", members}};
}

std::string upgrade_plan_text(const UpgradePlan& plan, const std::string& backup_note) {
  std::string out =
      "Cluster " + fmt::format("{:x}", plan.survey.info.cluster_id) + ", cluster version " +
      (plan.survey.cluster_version ? plan.survey.cluster_version->minor_str() : "unknown") +
      (plan.survey.downgrade_target ? ", downgrade to " + plan.survey.downgrade_target->minor_str() + " enabled" : "") +
      "; target etcd " + plan.target.str() + "\n\n";
  out += fmt::sprintf("%-5s  %-12s  %-16s  %-8s  %-9s  %-9s  %s\n", "ORDER", "NAME", "ID", "ROLE", "VERSION", "STEP",
                      "CHECK");
  int order = 0;
  for (const auto& e : plan.members) {
    const std::string role = member_role(e.member);
    bool done = e.step.kind == VersionStepKind::kSame;
    std::string check = !e.step.allowed ? "REFUSED: " + e.step.reason
                        : done          ? "at the target"
                        : e.quorum.safe ? "ok"
                                        : "REFUSED: " + e.quorum.explanation;
    out += fmt::sprintf("%-5s  %-12s  %-16s  %-8s  %-9s  %-9s  %s\n", done ? "-" : std::to_string(++order),
                        e.member.name, fmt::format("{:x}", e.member.id), role,
                        e.member.reachable ? e.member.version : "DOWN", version_step_name(e.step.kind), check);
  }
  if (!plan.allowed) {
    out += "\nNot possible now:\n";
    for (const auto& p : plan.problems) out += "  - " + p + "\n";
    for (const auto& e : plan.members) {
      if (!e.step.supported_path.empty()) {
        out += "Instead: " + e.step.supported_path + "\n";
        break;
      }
    }
    return out;
  }
  bool enable = false;
  for (const auto& e : plan.members) enable = enable || e.step.enable_downgrade;
  out +=
      "\nOn each member's host, in this order (followers first, the leader last; its leadership is moved away "
      "first):\n  etcdadm upgrade apply --version " +
      plan.target.str() + " --store <store> [--max-backup-age 1h]\n" +
      "Each apply checks the cluster again, restarts one member and waits until it has caught up.\n" +
      "Backup: " + backup_note + ".\n";
  if (enable) {
    out += "The first apply enables etcd's downgrade to " + plan.target.minor_str() +
           " (the cluster version goes down at once; cancel with etcdctl downgrade cancel).\n";
  }
  return out;
}

nlohmann::json upgrade_result_json(const UpgradeResult& r, const std::string& member_name) {
  return {{"name", member_name}, {"from", r.from},         {"to", r.to},        {"step", version_step_name(r.kind)},
          {"backup", r.backup},  {"phases", r.phases_run}, {"checks", r.checks}};
}

std::string upgrade_result_text(const char* verb, const std::string& member_name, const UpgradeResult& r) {
  if (r.phases_run.size() == 1 && r.from == r.to) {
    return "Member " + member_name + " runs etcd " + r.to + " already: nothing to do\n";
  }
  std::string phases;
  for (const auto& p : r.phases_run) phases += (phases.empty() ? "" : ", ") + p;
  std::string out = std::string(verb) + " member " + member_name + " from etcd " + r.from + " to " + r.to + " (" +
                    version_step_name(r.kind) + "; phases: " + phases + ")\n";
  if (!r.backup.empty()) out += "  backup before the change: " + r.backup + "\n";
  for (const auto& c : r.checks) out += "  checked: " + c + "\n";
  return out;
}

}  // namespace etcdadm::render

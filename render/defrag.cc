#include "render/defrag.h"

#include <fmt/format.h>
#include <fmt/printf.h>

#include "common/text.h"
#include "etcdadm/quorum.h"

namespace etcdadm::render {

nlohmann::json defrag_plan_json(const DefragPlan& plan) {
  nlohmann::json members = nlohmann::json::array();
  for (const auto& e : plan.members) {
    members.push_back({{"memberId", id_hex(e.member.id)},
                       {"name", e.member.name},
                       {"role", member_role(e.member)},
                       {"dbSize", e.member.db_size},
                       {"dbSizeInUse", e.member.db_size_in_use},
                       {"due", e.due},
                       {"why", e.why}});
  }
  return {{"clusterId", id_hex(plan.info.cluster_id)}, {"problems", plan.problems}, {"members", members}};
}

std::string defrag_plan_text(const DefragPlan& plan) {
  std::string out = fmt::sprintf("%-5s  %-12s  %-16s  %-8s  %s\n", "ORDER", "NAME", "ID", "ROLE", "DB");
  int order = 0;
  for (const auto& e : plan.members) {
    out += fmt::sprintf("%-5s  %-12s  %-16s  %-8s  %s\n", e.due ? std::to_string(++order) : "-", e.member.name,
                        id_hex(e.member.id), member_role(e.member), e.why);
  }
  for (const auto& p : plan.problems) out += "Not now: " + p + "\n";
  return out;
}

nlohmann::json defrag_result_json(const DefragResult& r) {
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : r.members) {
    members.push_back({{"memberId", id_hex(m.id)},
                       {"name", m.name},
                       {"led", m.led},
                       {"leadershipMovedTo", m.leadership_moved_to},
                       {"dbSizeBefore", m.db_size_before},
                       {"dbSizeInUseBefore", m.in_use_before},
                       {"dbSizeAfter", m.db_size_after},
                       {"dbSizeInUseAfter", m.in_use_after},
                       {"stalledMs", m.stalled.count()},
                       {"caughtUpMs", m.caught_up.count()}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& e : r.plan.members) {
    if (!e.due) skipped.push_back({{"memberId", id_hex(e.member.id)}, {"name", e.member.name}, {"why", e.why}});
  }
  return {
      {"clusterId", id_hex(r.plan.info.cluster_id)}, {"backup", r.backup}, {"members", members}, {"skipped", skipped}};
}

std::string defrag_result_text(const DefragResult& r) {
  std::string out;
  if (r.members.empty()) {
    out = "No member needed a defrag:\n";
    for (const auto& e : r.plan.members) out += "  " + e.member.name + ": " + e.why + "\n";
    return out;
  }
  if (!r.backup.empty()) out += "Backup before the defrag: " + r.backup + "\n";
  out += fmt::sprintf("%-12s  %-16s  %-10s  %-10s  %-10s  %-9s  %s\n", "NAME", "ID", "DB BEFORE", "IN USE", "DB AFTER",
                      "STALL", "NOTE");
  for (const auto& m : r.members) {
    std::string note = m.led ? (m.leadership_moved_to.empty() ? "the only voter: writes waited"
                                                              : "led: leadership moved to " + m.leadership_moved_to)
                             : "";
    out += fmt::sprintf("%-12s  %-16s  %-10s  %-10s  %-10s  %-9s  %s\n", m.name, id_hex(m.id),
                        human_bytes(m.db_size_before), human_bytes(m.in_use_before), human_bytes(m.db_size_after),
                        fmt::format("{} ms", m.stalled.count()), note);
  }
  for (const auto& e : r.plan.members) {
    if (!e.due) out += "Left as it was: " + e.member.name + ": " + e.why + "\n";
  }
  return out;
}

}  // namespace etcdadm::render

#include "render/alarms.h"

#include "common/text.h"

namespace etcdadm::render {

nlohmann::json alarm_list_json(const std::vector<MemberAlarm>& alarms) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : alarms) out.push_back({{"memberId", id_hex(a.member_id)}, {"alarm", a.alarm}});
  return out;
}

std::string alarm_list_text(const std::vector<MemberAlarm>& alarms) {
  if (alarms.empty()) return "No alarm is raised.\n";
  std::string out;
  for (const auto& a : alarms) out += a.alarm + " on member " + id_hex(a.member_id) + "\n";
  return out;
}

nlohmann::json space_recovery_json(const SpaceRecoveryResult& r) {
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : r.defrag.members) {
    members.push_back({{"memberId", id_hex(m.id)},
                       {"name", m.name},
                       {"dbSizeBefore", m.db_size_before},
                       {"dbSizeAfter", m.db_size_after},
                       {"stalledMs", m.stalled.count()}});
  }
  return {{"alarms", alarm_list_json(r.alarms)},
          {"backup", r.backup},
          {"revision", r.revision},
          {"compactedTo", r.compacted_to},
          {"compaction", r.compaction_note},
          {"defragmented", members},
          {"largestDbBefore", r.largest_db_before},
          {"largestDbAfter", r.largest_db_after},
          {"quota", r.quota},
          {"disarmed", r.disarmed},
          {"notUnderQuota", r.not_under_quota}};
}

std::string space_recovery_text(const SpaceRecoveryResult& r) {
  if (r.alarms.empty() || r.revision == 0) {
    return (r.alarms.empty() ? std::string("No alarm is raised.")
                             : "No NOSPACE alarm (" + alarms_text(r.alarms) + ").") +
           "\n";
  }
  std::string out = "Alarms: " + alarms_text(r.alarms) + "\n";
  if (!r.backup.empty()) out += "Backup first: " + r.backup + "\n";
  out += "Compaction: " +
         (r.compacted_to > 0 ? "to revision " + std::to_string(r.compacted_to) + " (" + r.compaction_note + ")"
                             : r.compaction_note) +
         "\n";
  for (const auto& m : r.defrag.members) {
    out += "Defragmented " + m.name + ": " + human_bytes(m.db_size_before) + " -> " + human_bytes(m.db_size_after) +
           " (" + std::to_string(m.stalled.count()) + " ms)\n";
  }
  out += "Largest db file: " + human_bytes(r.largest_db_before) + " -> " + human_bytes(r.largest_db_after) +
         " of a quota of " + human_bytes(r.quota) + "\n";
  out += (r.disarmed ? "NOSPACE disarmed: writes are accepted again." : "NOT disarmed: " + r.not_under_quota) + "\n";
  return out;
}

}  // namespace etcdadm::render

// Maintenance (the acting controller, controller/decide.cc): etcd's NOSPACE alarm recovered, and
// members defragmented by the spec's threshold or schedule, one at a time, the leader last.
#include <algorithm>
#include <map>

#include "backup/schedule.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "controller/decide_concerns.h"
#include "etcdadm/maintenance/alarms.h"
#include "etcdadm/maintenance/defrag.h"

namespace etcdadm {

std::optional<std::string> space_recovery_held(const MaintenanceRecord& record, const AutoSpec& spec, int64_t now_unix,
                                               int64_t seen_seconds) {
  const auto& last = record.last_space_recovery;
  if (!last || last->disarmed || last->keep_revisions != spec.nospace_keep_revisions ||
      held_age(now_unix - last->unix, seen_seconds) >= kSpaceRetrySeconds) {
    return std::nullopt;
  }
  // Absolute times: a wait's reason must stay the same from round to round (one event, not one a round).
  return "the recovery at " + format_rfc3339_seconds(SystemTime(std::chrono::seconds(last->unix))) + " (by " +
         last->host + ") could not get under the quota: " + last->note + "; tried again at " +
         format_rfc3339_seconds(SystemTime(std::chrono::seconds(last->unix + kSpaceRetrySeconds))) +
         ", or at once with another --nospace-keep-revisions";
}

namespace decide_parts {

std::optional<Decision> recover_space(const Observation& o) {
  const auto alarms = alarms_in_status(o.cluster.info);
  if (!std::any_of(alarms.begin(), alarms.end(), [](const MemberAlarm& a) { return a.alarm == "NOSPACE"; }))
    return std::nullopt;
  // (A CORRUPT alarm beside it never gets here: act_on_corruption waits or acts on it first.)
  const std::string command = "etcdadm alarm recover --keep-revisions " +
                              std::to_string(o.auto_spec.nospace_keep_revisions) + " --store " + o.store_url;
  if (auto held = space_recovery_held(o.maintenance, o.auto_spec, o.now_unix, o.space_recovery_seen_seconds)) {
    return make(Step::kWait, "etcd raised " + alarms_text(alarms) + "; " + *held, command);
  }
  return make(
      Step::kRecoverSpace,
      "etcd raised " + alarms_text(alarms) +
          ": the cluster takes no writes. Recovering: a backup, compaction "
          "keeping " +
          std::to_string(o.auto_spec.nospace_keep_revisions) +
          " revisions, every member defragmented (the leader last), the alarm disarmed once every member is under " +
          std::to_string(o.auto_spec.nospace_disarm_below_percent) + "% of its quota",
      command);
}

std::optional<Decision> maintain(const Observation& o) {
  const AutoSpec& spec = o.auto_spec;
  std::optional<Schedule> schedule;
  if (!spec.defrag_schedule.empty()) schedule = Schedule::parse(spec.defrag_schedule);
  const SystemTime now = SystemTime(std::chrono::seconds(o.now_unix));
  std::vector<std::string> due;
  std::map<uint64_t, std::string> why;
  for (const auto& m : o.cluster.info.members) {
    if (!m.reachable) continue;
    const int64_t free = std::max<int64_t>(0, m.db_size - m.db_size_in_use);
    const bool by_threshold = spec.defrag_free_percent > 0 && m.db_size > 0 &&
                              free * 100 >= m.db_size * spec.defrag_free_percent && free >= spec.defrag_min_free_bytes;
    auto last = o.maintenance.defrags.find(m.id);
    const int64_t last_unix = last == o.maintenance.defrags.end() ? 0 : last->second.unix;
    const bool by_schedule = schedule && schedule->next_after(SystemTime(std::chrono::seconds(last_unix))) <= now;
    if (!by_threshold && !by_schedule) continue;
    due.push_back(id_hex(m.id));
    why[m.id] = by_threshold
                    ? std::to_string(free * 100 / m.db_size) + "% of " + human_bytes(m.db_size) + " free"
                    : "due on the schedule " + spec.defrag_schedule +
                          (last_unix == 0
                               ? " (never defragmented)"
                               : " (last " + format_rfc3339_seconds(SystemTime(std::chrono::seconds(last_unix))) + ")");
  }
  if (due.empty()) return std::nullopt;
  const DefragPlan plan = plan_defrag(o.cluster.info, alarms_in_status(o.cluster.info), DefragRule{}, due);
  std::string command = "etcdadm defrag";
  for (const auto& id : due) command += " --member " + id;
  command += " --store " + o.store_url;
  if (!plan.problems.empty()) {
    return make(Step::kWait, "members are due a defrag, but not now: " + join_list(plan.problems), command);
  }
  std::string reason;
  Decision d = make(Step::kDefragment, "", command);
  for (const auto& e : plan.members) {
    if (!e.due) continue;
    d.members.push_back(e.member.id);
    reason += (reason.empty() ? "" : "; ") + member_label(e.member) + ": " + why[e.member.id];
  }
  d.reason = "defragmenting one member at a time, the leader last (" + reason + ")";
  return d;
}

}  // namespace decide_parts
}  // namespace etcdadm

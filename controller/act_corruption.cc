// Corruption (controller/decide_corruption.cc decides): the acting controller compares the voters'
// HashKV (every corrupt_check_seconds, and every kCorruptAlarmCheck under etcd's CORRUPT alarm or
// while a voter is refused on inconsistent data), and disarms the alarm once the corrupt member
// was replaced.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "etcdadm/member_health.h"

namespace etcdadm {

using namespace controller_internal;
using std::chrono::steady_clock;

void Controller::observe_hashes(Observation& o) {
  if (local_member_removed(o)) o.maintenance = readable_maintenance(*store_, record_policy());
  if (!o.spec || !is_acting(o)) {
    last_hash_check_.reset();
    return;
  }
  // An unhealthy voter whose etcd refused to start on inconsistent data is left out, and the others
  // compared at once (act_on_refused_members); any other unhealthy voter is the replace rule's.
  ClusterInfo surveyed = o.cluster.info;
  size_t refused = 0;
  for (const auto& m : o.cluster.info.members) {
    if (m.learner || member_healthy(m)) continue;
    if (host_refusing_member(o, m.id) == nullptr) return;  // the replace rule's first
    ++refused;
    std::erase_if(surveyed.members, [&](const MemberInfo& x) { return x.id == m.id; });
  }
  const auto alarms = alarms_in_status(o.cluster.info);
  const bool alarm =
      std::any_of(alarms.begin(), alarms.end(), [](const MemberAlarm& a) { return a.alarm == "CORRUPT"; });
  if (!alarm && refused == 0 && o.auto_spec.corrupt_check_seconds == 0) return;
  const auto interval = alarm || refused > 0 ? std::chrono::seconds(kCorruptAlarmCheck)
                                             : std::chrono::seconds(o.auto_spec.corrupt_check_seconds);
  const auto now = steady_clock::now();
  if (last_hash_check_ && now - *last_hash_check_ < interval) return;
  last_hash_check_ = now;
  Observation::HashCheck check;
  check.survey = survey_hashes(pool_, surveyed);
  check.verdict = judge_hashes(check.survey);
  if (check.verdict.kind == HashVerdict::Kind::kAgree) {
    spdlog::debug("auto: {}", check.verdict.explanation);
  } else {
    spdlog::warn("auto: comparing the voters' data: {}", check.verdict.explanation);
  }
  if (alarm) o.maintenance = readable_maintenance(*store_, record_policy());
  o.hashes = std::move(check);
}

void Controller::disarm_corrupt(const Decision& d) {
  if (!still_leads(d)) return;
  recorded(d, [&] {
    EtcdClient& client = pool_.client(member_.loopback_client_url());
    for (uint64_t id : d.members) client.alarm_disarm(id, etcdserverpb::AlarmMember::CORRUPT);
    // The replacements that excused it excuse no later alarm.
    update_maintenance([](MaintenanceRecord& m) {
      for (auto& [id, c] : m.corrupt) c.alarm_settled = true;
    });
  });
}

}  // namespace etcdadm

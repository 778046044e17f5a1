#include "etcdadm/maintenance/alarms.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace etcdadm {

std::vector<MemberAlarm> list_alarms(EtcdClient& cluster) {
  std::vector<MemberAlarm> out;
  const auto response = cluster.alarm_list();
  for (const auto& a : response.alarms()) {
    if (a.alarm() == etcdserverpb::AlarmMember::NONE) continue;
    out.push_back({a.memberid(), etcdserverpb::AlarmMember::AlarmType_Name(a.alarm())});
  }
  return out;
}

std::vector<MemberAlarm> alarms_in_status(const ClusterInfo& info) {
  std::vector<MemberAlarm> out;
  for (const auto& m : info.members) {
    for (const auto& e : m.errors) {
      const size_t at = e.find("alarm:");
      if (at == std::string::npos) continue;
      MemberAlarm a;
      size_t end = at + 6;
      while (end < e.size() && e[end] >= 'A' && e[end] <= 'Z') ++end;
      a.alarm = e.substr(at + 6, end - at - 6);
      if (a.alarm.empty() || a.alarm == "NONE") continue;
      if (size_t id = e.find("memberID:"); id != std::string::npos) {
        a.member_id = std::strtoull(e.c_str() + id + 9, nullptr, 10);
      }
      if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
    }
  }
  return out;
}

std::string alarms_text(const std::vector<MemberAlarm>& alarms) {
  std::string out;
  for (const auto& a : alarms) out += (out.empty() ? "" : ", ") + fmt::format("{} on {:x}", a.alarm, a.member_id);
  return out;
}

}  // namespace etcdadm

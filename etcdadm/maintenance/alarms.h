// etcd's alarms as etcdadm reads them: NOSPACE (a member's db file reached its quota: the cluster
// takes no writes) and CORRUPT (members' data differ). Listed through the Alarm API, or read from
// what every member's Status already says (no request of its own: the controller's every round).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcdadm/lifecycle/local_member.h"

namespace etcdadm {

// An active etcd alarm: "NOSPACE" or "CORRUPT", raised by (or for) `member_id`.
struct MemberAlarm {
  uint64_t member_id = 0;
  std::string alarm;
  bool operator==(const MemberAlarm&) const = default;
};
std::vector<MemberAlarm> list_alarms(EtcdClient& cluster);
// The alarms every member's Status lists among its errors ("memberID:<decimal> alarm:NOSPACE"), as
// cluster_info saw them: no request of its own. Each alarm once.
std::vector<MemberAlarm> alarms_in_status(const ClusterInfo& info);
// "NOSPACE on 8e9e05c52164694d, CORRUPT on ..."
std::string alarms_text(const std::vector<MemberAlarm>& alarms);

}  // namespace etcdadm

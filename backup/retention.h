// Which backups a retention policy keeps. Pure logic over backup names: a backup's time is parsed
// from its name (store/layout.h), never taken from string order (etcd-operator's bug: sorting
// names as text deleted the newest backup once a field gained a digit).
//
// Policies:
//   etcd-manager   keep everything younger than 1 h, the earliest backup of each hour for
//                  `hourly_for` (7 d), the earliest of each day for `daily_for` (2 y), nothing older.
//                  ETCD_MANAGER_HOURLY_BACKUPS_RETENTION / ETCD_MANAGER_DAILY_BACKUPS_RETENTION
//                  override the windows, as in etcd-manager.
//   count:N        keep the newest N.
//   gfs:H,D,W,M    keep the newest backup of each of the last H hours, D days, W ISO weeks and M
//                  months that have backups (restic's --keep-hourly/daily/weekly/monthly).
// Safety rules, whatever the policy: the newest backup is always kept; names that do not parse
// are never deleted; a backup dated in the future (clock skew) is kept.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/timefmt.h"

namespace etcdadm {

struct RetentionPolicy {
  enum class Kind { kEtcdManager, kCount, kGfs };
  Kind kind = Kind::kEtcdManager;
  std::chrono::seconds hourly_for = std::chrono::hours(24 * 7);
  std::chrono::seconds daily_for = std::chrono::hours(24 * 365 * 2);
  int count = 0;
  int hourly = 0, daily = 0, weekly = 0, monthly = 0;
  std::string describe() const;
};

// "etcd-manager", "count:N" or "gfs:H,D,W,M". Throws Error(kInvalidArgument).
RetentionPolicy parse_retention_policy(const std::string& spec, const Environment& env);

struct RetentionPlan {
  std::vector<std::string> keep;         // newest first
  std::vector<std::string> remove;       // newest first
  std::vector<std::string> unparseable;  // kept, reported
};

RetentionPlan plan_retention(const std::vector<std::string>& backup_names, SystemTime now, const RetentionPolicy& policy);

}  // namespace etcdadm

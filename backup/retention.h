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
// Safety rules, whatever the policy (a store writer, or a host whose clock is wrong, may add or
// date entries as it likes; they can make prune keep more, never delete more):
//   - names that do not parse are never deleted;
//   - an entry that is not a whole backup (its metadata does not parse, names no data file the
//     store holds, or it is marked damaged) is kept and reported, and fills no quota;
//   - a backup dated in the future (a clock is off) is kept and fills no quota: otherwise N
//     entries dated 2099 would fill count:N and every bucket, and the real backups would go;
//   - the newest whole backup not in the future always stays.
// prune_backups adds one more: a plan that deletes anything must leave a whole backup younger
// than the policy's shortest period (RetentionPolicy::shortest_period), or it is refused.
#pragma once

#include <chrono>
#include <optional>
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
  // The --policy text that parses back to this policy (etcd-manager's windows come from its variables).
  std::string spec() const;
  // The age within which a store served by this policy must hold a backup before a prune may
  // delete anything: the smallest window the policy keeps a backup of (1 h for etcd-manager and
  // gfs with hourly buckets; a day, week or 31 days for gfs without smaller ones). None for count:N,
  // which does not look at time (except to set aside backups from the future).
  std::optional<std::chrono::seconds> shortest_period() const;
};

// "etcd-manager", "count:N" or "gfs:H,D,W,M". Throws Error(kInvalidArgument).
RetentionPolicy parse_retention_policy(const std::string& spec, const Environment& env);

// One listed backup as the policy sees it.
struct RetentionEntry {
  std::string name;
  // Why it is not a whole backup, "" when it is (see the safety rules above).
  std::string not_whole;
};

struct RetentionPlan {
  std::vector<std::string> keep;         // every dated entry kept, newest first
  std::vector<std::string> remove;       // newest first
  std::vector<std::string> unparseable;  // kept, reported
  // Kept without filling any quota: dated after `now`, and entries that are not whole backups
  // (name, why). Both are in `keep` too.
  std::vector<std::string> future;
  std::vector<std::pair<std::string, std::string>> not_whole;
  // The newest whole backup not in the future, which always stays; "" when there is none.
  std::string newest_whole;
  // Whether a whole backup younger than the policy's shortest period is kept (true when the
  // policy has none).
  bool keeps_a_recent_backup = true;
};

RetentionPlan plan_retention(const std::vector<RetentionEntry>& entries, SystemTime now, const RetentionPolicy& policy);
// Every entry taken for a whole backup (names only: the policy's arithmetic, in unit tests).
RetentionPlan plan_retention(const std::vector<std::string>& backup_names, SystemTime now,
                             const RetentionPolicy& policy);

}  // namespace etcdadm

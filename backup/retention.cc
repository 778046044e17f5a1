#include "backup/retention.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <sstream>

#include "common/error.h"
#include "store/layout.h"

namespace etcdadm {

namespace {

[[noreturn]] void bad(const std::string& spec, const std::string& why) {
  throw Error(ErrorKind::kInvalidArgument, "invalid retention policy '" + spec + "': " + why,
              "use etcd-manager, count:N or gfs:HOURLY,DAILY,WEEKLY,MONTHLY (e.g. gfs:24,7,4,12)");
}

int parse_count(const std::string& s, const std::string& spec) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
    bad(spec, "'" + s + "' is not a non-negative number");
  }
  return std::stoi(s);
}

std::chrono::seconds window_from_env(const Environment& env, const char* var, std::chrono::seconds fallback) {
  std::string v = env.value(var);
  if (v.empty()) return fallback;
  auto d = parse_duration(v);
  if (!d || d->count() < 0) {
    throw Error(ErrorKind::kInvalidArgument, std::string(var) + "=" + v + " is not a duration", "e.g. 168h, 7d, 2y");
  }
  return std::chrono::duration_cast<std::chrono::seconds>(*d);
}

struct Dated {
  std::string name;
  SystemTime time;
  int64_t suffix;
};

// Calendar buckets for gfs, as sortable integers.
int64_t hour_bucket(SystemTime t) {
  return std::chrono::duration_cast<std::chrono::hours>(t.time_since_epoch()).count();
}
int64_t day_bucket(SystemTime t) { return hour_bucket(t) / 24; }  // backups are dated after 1970
int64_t month_bucket(SystemTime t) {
  std::tm tm = utc_tm(t);
  return (tm.tm_year + 1900) * 12 + tm.tm_mon;
}
int64_t iso_week_bucket(SystemTime t) {
  std::tm tm = utc_tm(t);
  char buf[16];
  std::strftime(buf, sizeof buf, "%G%V", &tm);  // ISO year + ISO week number
  return std::stoll(buf);
}

// Keeps the newest backup of each of the first `n` buckets (newest first) that hold backups.
void keep_newest_per_bucket(const std::vector<Dated>& newest_first, int n, int64_t (*bucket)(SystemTime),
                            std::set<std::string>& keep) {
  std::set<int64_t> seen;
  for (const auto& b : newest_first) {
    if (static_cast<int>(seen.size()) >= n) break;
    if (seen.insert(bucket(b.time)).second) keep.insert(b.name);
  }
}

}  // namespace

std::string RetentionPolicy::describe() const {
  switch (kind) {
    case Kind::kEtcdManager:
      return "etcd-manager (all < 1h, hourly for " + format_duration_short(hourly_for) + ", daily for " +
             format_duration_short(daily_for) + ")";
    case Kind::kCount:
    case Kind::kGfs:
      return spec();
  }
  return "?";
}

std::string RetentionPolicy::spec() const {
  switch (kind) {
    case Kind::kEtcdManager:
      return "etcd-manager";
    case Kind::kCount:
      return "count:" + std::to_string(count);
    case Kind::kGfs:
      return "gfs:" + std::to_string(hourly) + "," + std::to_string(daily) + "," + std::to_string(weekly) + "," +
             std::to_string(monthly);
  }
  return "?";
}

RetentionPolicy parse_retention_policy(const std::string& spec, const Environment& env) {
  RetentionPolicy p;
  if (spec == "etcd-manager") {
    p.kind = RetentionPolicy::Kind::kEtcdManager;
    p.hourly_for = window_from_env(env, "ETCD_MANAGER_HOURLY_BACKUPS_RETENTION", p.hourly_for);
    p.daily_for = window_from_env(env, "ETCD_MANAGER_DAILY_BACKUPS_RETENTION", p.daily_for);
    return p;
  }
  auto colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  std::string args = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "count") {
    p.kind = RetentionPolicy::Kind::kCount;
    p.count = parse_count(args, spec);
    if (p.count < 1) bad(spec, "count must be at least 1 (the newest backup is always kept)");
    return p;
  }
  if (kind == "gfs") {
    p.kind = RetentionPolicy::Kind::kGfs;
    std::vector<int> n;
    std::stringstream in(args);
    for (std::string item; std::getline(in, item, ',');) n.push_back(parse_count(item, spec));
    if (n.size() != 4) bad(spec, "gfs needs 4 numbers: hourly,daily,weekly,monthly");
    p.hourly = n[0];
    p.daily = n[1];
    p.weekly = n[2];
    p.monthly = n[3];
    return p;
  }
  bad(spec, "unknown policy '" + kind + "'");
}

std::optional<std::chrono::seconds> RetentionPolicy::shortest_period() const {
  using std::chrono::hours;
  switch (kind) {
    case Kind::kEtcdManager:
      return hours(1);  // everything younger than an hour stays
    case Kind::kCount:
      return std::nullopt;
    case Kind::kGfs:
      if (hourly > 0) return hours(1);
      if (daily > 0) return hours(24);
      if (weekly > 0) return hours(24 * 7);
      if (monthly > 0) return hours(24 * 31);
      return std::nullopt;
  }
  return std::nullopt;
}

RetentionPlan plan_retention(const std::vector<RetentionEntry>& entries, SystemTime now,
                             const RetentionPolicy& policy) {
  RetentionPlan plan;
  std::vector<Dated> all, whole;  // whole: the backups the policy counts (not from the future)
  std::map<std::string, std::string> not_whole;
  for (const auto& e : entries) {
    auto parsed = parse_backup_name(e.name);
    if (!parsed) {
      plan.unparseable.push_back(e.name);
      continue;
    }
    all.push_back({e.name, parsed->time, parsed->suffix});
    if (!e.not_whole.empty()) not_whole[e.name] = e.not_whole;
  }
  std::sort(all.begin(), all.end(), [](const Dated& a, const Dated& b) {
    return a.time != b.time ? a.time > b.time : a.suffix > b.suffix;  // newest first, by parsed time
  });

  std::set<std::string> keep;
  for (const auto& b : all) {
    if (b.time > now) {
      keep.insert(b.name);  // from the future: a clock is off; kept, but it fills no quota
      plan.future.push_back(b.name);
    } else if (auto it = not_whole.find(b.name); it != not_whole.end()) {
      keep.insert(b.name);  // not a backup we could restore: never counted, never deleted here
      plan.not_whole.emplace_back(b.name, it->second);
    } else {
      whole.push_back(b);
    }
  }
  if (!whole.empty()) {
    plan.newest_whole = whole.front().name;
    keep.insert(plan.newest_whole);  // the newest real backup always stays
  }
  switch (policy.kind) {
    case RetentionPolicy::Kind::kCount:
      for (size_t i = 0; i < whole.size() && static_cast<int>(i) < policy.count; ++i) keep.insert(whole[i].name);
      break;
    case RetentionPolicy::Kind::kGfs:
      keep_newest_per_bucket(whole, policy.hourly, hour_bucket, keep);
      keep_newest_per_bucket(whole, policy.daily, day_bucket, keep);
      keep_newest_per_bucket(whole, policy.weekly, iso_week_bucket, keep);
      keep_newest_per_bucket(whole, policy.monthly, month_bucket, keep);
      break;
    case RetentionPolicy::Kind::kEtcdManager: {
      // Oldest first, so the earliest backup of each hour/day is the one kept (etcd-manager's rule).
      std::set<int64_t> hours_seen, days_seen;
      for (auto it = whole.rbegin(); it != whole.rend(); ++it) {
        auto age = now - it->time;
        if (age < std::chrono::hours(1)) {
          keep.insert(it->name);
        } else if (age < policy.hourly_for) {
          if (hours_seen.insert(hour_bucket(it->time)).second) keep.insert(it->name);
        } else if (age < policy.daily_for) {
          if (days_seen.insert(day_bucket(it->time)).second) keep.insert(it->name);
        }
      }
      break;
    }
  }
  for (const auto& b : all) (keep.count(b.name) ? plan.keep : plan.remove).push_back(b.name);
  if (auto period = policy.shortest_period()) {
    plan.keeps_a_recent_backup = std::any_of(
        whole.begin(), whole.end(), [&](const Dated& b) { return keep.count(b.name) && now - b.time < *period; });
  }
  return plan;
}

RetentionPlan plan_retention(const std::vector<std::string>& names, SystemTime now, const RetentionPolicy& policy) {
  std::vector<RetentionEntry> entries;
  for (const auto& n : names) entries.push_back({n, ""});
  return plan_retention(entries, now, policy);
}

}  // namespace etcdadm

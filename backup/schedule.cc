#include "backup/schedule.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <vector>

#include "common/error.h"
#include "common/fs.h"

namespace etcdadm {

namespace {

const char* kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
const char* kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

[[noreturn]] void bad(const std::string& spec, const std::string& why) {
  throw Error(ErrorKind::kInvalidArgument, "invalid schedule '" + spec + "': " + why,
              "use 5 cron fields (e.g. '0 */6 * * *'), @hourly/@daily/@weekly, or '@every 15m'");
}

// A number or (for months and weekdays) a three-letter name.
int parse_value(const std::string& s, int offset_names, const char* const* names, int name_count,
                const std::string& spec, const std::string& field) {
  if (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) bad(spec, field + " value '" + s + "' is not a number");
    }
    return std::stoi(s);
  }
  std::string up = s;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  for (int i = 0; i < name_count; ++i) {
    if (names != nullptr && up == names[i]) return i + offset_names;
  }
  bad(spec, field + " value '" + s + "' is not understood");
}

// Parses one cron field into the set of allowed values within [lo, hi].
template <size_t N>
std::bitset<N> parse_field(const std::string& text, int lo, int hi, const std::string& field, const std::string& spec,
                           const char* const* names = nullptr, int name_count = 0, int offset_names = 0,
                           bool* restricted = nullptr) {
  std::bitset<N> out;
  if (restricted != nullptr) *restricted = !(text == "*" || text == "?");
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    if (part.empty()) bad(spec, "empty list item in the " + field + " field");
    int step = 1;
    auto slash = part.find('/');
    std::string range = part.substr(0, slash);
    if (slash != std::string::npos) {
      std::string s = part.substr(slash + 1);
      if (s.empty() || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
        bad(spec, "step '" + s + "' in the " + field + " field is not a number");
      }
      step = std::stoi(s);
      if (step <= 0) bad(spec, "step 0 in the " + field + " field");
    }
    int first, last;
    if (range == "*" || range == "?") {
      first = lo;
      last = hi;
    } else {
      auto dash = range.find('-');
      first = parse_value(range.substr(0, dash), offset_names, names, name_count, spec, field);
      if (dash != std::string::npos) {
        last = parse_value(range.substr(dash + 1), offset_names, names, name_count, spec, field);
      } else {
        last = slash != std::string::npos ? hi : first;  // "5/15" = from 5 to the end, every 15
      }
    }
    if (first < lo || last > hi || first > last) {
      bad(spec, field + " range " + range + " is outside " + std::to_string(lo) + "-" + std::to_string(hi));
    }
    for (int v = first; v <= last; v += step) out.set(static_cast<size_t>(v));
  }
  return out;
}

}  // namespace

Schedule Schedule::parse(const std::string& raw) {
  Schedule s;
  std::string spec = raw;
  while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.back()))) spec.pop_back();
  while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.front()))) spec.erase(spec.begin());
  s.spec_ = spec;
  if (spec.empty()) bad(raw, "empty");
  for (const char* prefix : {"CRON_TZ=", "TZ="}) {
    if (spec.rfind(prefix, 0) != 0) continue;
    auto space = spec.find(' ');
    if (space == std::string::npos) bad(raw, "a time zone without a schedule");
    s.zone_ = spec.substr(std::strlen(prefix), space - std::strlen(prefix));
    spec = spec.substr(space + 1);
    if (s.zone_.empty() || s.zone_.find("..") != std::string::npos || !path_exists("/usr/share/zoneinfo/" + s.zone_)) {
      bad(raw, "unknown time zone '" + s.zone_ + "' (not in /usr/share/zoneinfo)");
    }
    if (s.zone_ == "UTC" || s.zone_ == "Etc/UTC") s.zone_.clear();
    break;
  }

  std::string duration;
  if (spec.rfind("@every", 0) == 0) {
    duration = spec.substr(6);
    duration.erase(0, duration.find_first_not_of(' '));
  } else if (std::isdigit(static_cast<unsigned char>(spec[0])) && spec.find(' ') == std::string::npos) {
    duration = spec;  // a plain interval such as "15m"
  }
  if ((!duration.empty() || spec == "@every") && !s.zone_.empty())
    bad(raw, "a time zone makes no sense for an interval");
  if (!duration.empty() || spec == "@every") {
    auto d = parse_duration(duration);
    if (!d || d->count() <= 0) bad(raw, "'" + duration + "' is not a positive duration");
    if (*d < std::chrono::seconds(1)) bad(raw, "an interval below 1s");
    if (*d > std::chrono::hours(24 * 366 * 10)) bad(raw, "an interval above 10 years");
    s.interval_ = *d;
    return s;
  }

  static const std::pair<const char*, const char*> kMacros[] = {
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
      {"@daily", "0 0 * * *"},  {"@midnight", "0 0 * * *"}, {"@hourly", "0 * * * *"}};
  std::string fields_text = spec;
  if (spec[0] == '@') {
    auto it = std::find_if(std::begin(kMacros), std::end(kMacros), [&](const auto& m) { return spec == m.first; });
    if (it == std::end(kMacros)) bad(raw, "unknown macro " + spec);
    fields_text = it->second;
  }
  std::istringstream in(fields_text);
  std::vector<std::string> f;
  for (std::string w; in >> w;) f.push_back(w);
  if (f.size() != 5)
    bad(raw, "expected 5 fields (minute hour day-of-month month day-of-week), got " + std::to_string(f.size()));

  s.minutes_ = parse_field<60>(f[0], 0, 59, "minute", raw);
  s.hours_ = parse_field<24>(f[1], 0, 23, "hour", raw);
  s.days_of_month_ = parse_field<32>(f[2], 1, 31, "day-of-month", raw, nullptr, 0, 0, &s.dom_restricted_);
  s.months_ = parse_field<13>(f[3], 1, 12, "month", raw, kMonthNames, 12, 1);
  auto dow = parse_field<8>(f[4], 0, 7, "day-of-week", raw, kDayNames, 7, 0, &s.dow_restricted_);
  for (int d = 0; d < 7; ++d) s.days_of_week_[static_cast<size_t>(d)] = dow[static_cast<size_t>(d)];
  if (dow[7]) s.days_of_week_.set(0);  // 7 is Sunday as well
  // A schedule that can never fire (e.g. "0 0 31 2 *") is a mistake, not a quiet sidecar.
  if (s.zone_.empty()) s.next_after(std::chrono::system_clock::from_time_t(0));
  return s;
}

void apply_schedule_time_zone(const Schedule& schedule) {
  if (schedule.time_zone().empty()) return;
  ::setenv("TZ", schedule.time_zone().c_str(), 1);
  ::tzset();
}

SystemTime Schedule::next_after(SystemTime t) const {
  if (interval_) return t + *interval_;
  if (!zone_.empty()) {
    const char* tz = std::getenv("TZ");
    if (tz == nullptr || zone_ != tz) {
      throw Error(ErrorKind::kInternal, "schedule in time zone " + zone_ + " used without apply_schedule_time_zone()");
    }
  }
  // Calendar fields in the schedule's zone: UTC, or the process's local zone (= the schedule's).
  auto to_fields = [&](SystemTime x) {
    if (zone_.empty()) return utc_tm(x);
    std::time_t tt = std::chrono::system_clock::to_time_t(x);
    std::tm local{};
    localtime_r(&tt, &local);
    return local;
  };
  auto from_fields = [&](std::tm fields) {
    if (zone_.empty()) return from_utc_tm(fields);
    fields.tm_isdst = -1;  // let the C library decide across DST changes
    return std::chrono::system_clock::from_time_t(std::mktime(&fields));
  };
  // The next whole minute strictly after t, in real time (local times can repeat).
  SystemTime cur = std::chrono::floor<std::chrono::minutes>(t) + std::chrono::minutes(1);
  std::tm tm{};
  // Leap years repeat every 4 years (8 across a skipped century leap day): 9 years of days is
  // enough to find any date that exists at all.
  const SystemTime limit = cur + std::chrono::hours(24 * 366 * 9);
  // Local times repeat when clocks go back: a step must never move backwards in real time.
  auto advance = [&](std::tm fields) {
    SystemTime next = from_fields(fields);
    cur = next > cur ? next : cur + std::chrono::minutes(1);
  };
  while (cur < limit) {
    tm = to_fields(cur);
    if (!months_[static_cast<size_t>(tm.tm_mon + 1)]) {
      tm.tm_mon += 1;
      tm.tm_mday = 1;
      tm.tm_hour = 0;
      tm.tm_min = 0;
      advance(tm);
      continue;
    }
    bool dom = days_of_month_[static_cast<size_t>(tm.tm_mday)];
    bool dow = days_of_week_[static_cast<size_t>(tm.tm_wday)];
    bool day_ok = (dom_restricted_ && dow_restricted_) ? (dom || dow) : (dom && dow);
    if (!day_ok) {
      tm.tm_mday += 1;
      tm.tm_hour = 0;
      tm.tm_min = 0;
      advance(tm);
      continue;
    }
    // Hours and minutes advance in real time, so a local hour that repeats when clocks go back
    // is visited twice and one that is skipped when they go forward is not visited at all.
    if (!hours_[static_cast<size_t>(tm.tm_hour)]) {
      cur += std::chrono::minutes(60 - tm.tm_min);
      continue;
    }
    if (!minutes_[static_cast<size_t>(tm.tm_min)]) {
      cur += std::chrono::minutes(1);
      continue;
    }
    return cur;
  }
  throw Error(ErrorKind::kInvalidArgument, "schedule '" + spec_ + "' never fires (no such date)",
              "check the day-of-month and month fields");
}

}  // namespace etcdadm

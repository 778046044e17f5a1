#include "common/timefmt.h"

#include <cstdio>
#include <ctime>

namespace etcdadm {

int64_t to_unix_micros(SystemTime t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

SystemTime from_unix_micros(int64_t micros) {
  return SystemTime(std::chrono::duration_cast<SystemTime::duration>(std::chrono::microseconds(micros)));
}

static std::string format_utc(SystemTime t, bool micros) {
  int64_t us = to_unix_micros(t);
  int64_t secs = us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
  int64_t frac = us - secs * 1000000;
  time_t tt = static_cast<time_t>(secs);
  struct tm tm;
  gmtime_r(&tt, &tm);
  char buf[64];
  if (micros) {
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(frac));
  } else {
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
  return buf;
}

std::string format_rfc3339_seconds(SystemTime t) { return format_utc(t, false); }
std::string format_rfc3339_micros(SystemTime t) { return format_utc(t, true); }

static bool read_digits(const std::string& s, size_t& pos, size_t count, int& out) {
  if (pos + count > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < count; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  pos += count;
  out = v;
  return true;
}

static bool expect(const std::string& s, size_t& pos, char c) {
  if (pos >= s.size() || (s[pos] != c && !(c == 'T' && s[pos] == 't'))) return false;
  ++pos;
  return true;
}

std::optional<SystemTime> parse_rfc3339(const std::string& s) {
  size_t pos = 0;
  int year, mon, day, hour, min, sec;
  if (!read_digits(s, pos, 4, year) || !expect(s, pos, '-') || !read_digits(s, pos, 2, mon) || !expect(s, pos, '-') ||
      !read_digits(s, pos, 2, day) || !expect(s, pos, 'T') || !read_digits(s, pos, 2, hour) || !expect(s, pos, ':') ||
      !read_digits(s, pos, 2, min) || !expect(s, pos, ':') || !read_digits(s, pos, 2, sec)) {
    return std::nullopt;
  }
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60) return std::nullopt;
  // SystemTime counts nanoseconds in 64 bits: years 1678-2262 only. Anything a backup, a server
  // or a credential can mean lies within 1970-2200; outside, the conversion would overflow.
  if (year < 1970 || year > 2200) return std::nullopt;
  int64_t micros = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 6) micros = micros * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 6; ++i) micros *= 10;
  }
  int offset_minutes = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int sign = s[pos] == '-' ? -1 : 1;
    ++pos;
    int oh, om;
    if (!read_digits(s, pos, 2, oh) || !expect(s, pos, ':') || !read_digits(s, pos, 2, om)) return std::nullopt;
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  struct tm tm {};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  time_t secs = timegm(&tm);
  secs -= offset_minutes * 60;
  return from_unix_micros(static_cast<int64_t>(secs) * 1000000 + micros);
}

std::optional<std::chrono::milliseconds> parse_duration(const std::string& s) {
  if (s.empty()) return std::nullopt;
  if (s == "0") return std::chrono::milliseconds(0);
  double total_ms = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    while (pos < s.size() && ((s[pos] >= '0' && s[pos] <= '9') || s[pos] == '.')) ++pos;
    if (pos == start) return std::nullopt;
    double value;
    try {
      value = std::stod(s.substr(start, pos - start));
    } catch (...) {
      return std::nullopt;
    }
    size_t ustart = pos;
    while (pos < s.size() && ((s[pos] >= 'a' && s[pos] <= 'z'))) ++pos;
    std::string unit = s.substr(ustart, pos - ustart);
    double ms;
    if (unit == "ms")
      ms = 1;
    else if (unit == "s")
      ms = 1000;
    else if (unit == "m")
      ms = 60 * 1000;
    else if (unit == "h")
      ms = 3600 * 1000;
    else if (unit == "d")
      ms = 24.0 * 3600 * 1000;
    else if (unit == "y")
      ms = 365.0 * 24 * 3600 * 1000;
    else
      return std::nullopt;
    total_ms += value * ms;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(total_ms));
}

std::string format_duration_short(std::chrono::seconds d) {
  int64_t s = d.count();
  if (s < 0) s = 0;
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>((s % 3600) / 60));
  else
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>((s % 86400) / 3600));
  return buf;
}

std::tm utc_tm(SystemTime t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return tm;
}

SystemTime from_utc_tm(std::tm tm) { return std::chrono::system_clock::from_time_t(timegm(&tm)); }

namespace {
constexpr const char* kWeekdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
}  // namespace

std::string format_http_date(SystemTime t) {
  std::tm tm = utc_tm(t);
  char buf[40];
  // Names spelled out here: strftime's %a and %b follow the locale.
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kWeekdays[tm.tm_wday], tm.tm_mday,
                kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::optional<SystemTime> parse_http_date(const std::string& s) {
  // "Wed, 25 Nov 2026 05:30:00 GMT": 29 characters.
  if (s.size() != 29 || s.compare(3, 2, ", ") != 0 || s.compare(25, 4, " GMT") != 0) return std::nullopt;
  std::tm tm{};
  int month = -1;
  for (int i = 0; i < 12; ++i) {
    if (s.compare(8, 3, kMonths[i]) == 0) month = i;
  }
  auto digits = [&](size_t at, size_t n, int& out) {
    out = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      out = out * 10 + (s[i] - '0');
    }
    return true;
  };
  int day, year, hour, minute, second;
  if (month < 0 || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' || s[19] != ':' || s[22] != ':' || !digits(5, 2, day) ||
      !digits(12, 4, year) || !digits(17, 2, hour) || !digits(20, 2, minute) || !digits(23, 2, second)) {
    return std::nullopt;
  }
  if (year < 1970 || year > 2200 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  tm.tm_year = year - 1900;
  tm.tm_mon = month;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return from_utc_tm(tm);
}

}  // namespace etcdadm

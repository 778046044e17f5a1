// Time formatting and parsing used by backup names, metadata and durations on the command line.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>

namespace etcdadm {

using SystemTime = std::chrono::system_clock::time_point;

// Microseconds since the Unix epoch.
int64_t to_unix_micros(SystemTime t);
SystemTime from_unix_micros(int64_t micros);

// "2026-11-21T10:04:05Z" (UTC, seconds precision).
std::string format_rfc3339_seconds(SystemTime t);
// "2026-11-21T10:04:05.123456Z" (UTC, microsecond precision).
std::string format_rfc3339_micros(SystemTime t);
// Parses "YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm)". Returns nullopt when malformed or when
// the year is outside 1970-2200 (what SystemTime can hold, with room for offsets).
std::optional<SystemTime> parse_rfc3339(const std::string& s);

// HTTP dates (RFC 9110 IMF-fixdate, always GMT): "Wed, 25 Nov 2026 05:30:00 GMT", as Azure
// Storage signs and lists them. Parsing takes only that form; nullopt otherwise.
std::string format_http_date(SystemTime t);
std::optional<SystemTime> parse_http_date(const std::string& s);

// Calendar fields of `t` in UTC, and back (struct tm fields may be out of range: normalized).
std::tm utc_tm(SystemTime t);
SystemTime from_utc_tm(std::tm tm);

// Parses Go-style durations ("1h30m", "500ms", "2s") plus "d" (24h) and "y" (365d).
// Returns nullopt when malformed.
std::optional<std::chrono::milliseconds> parse_duration(const std::string& s);

// "3m12s", "2h05m", "4d03h": a short human age/duration.
std::string format_duration_short(std::chrono::seconds d);

}  // namespace etcdadm

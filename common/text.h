// Small text helpers shared by the parsers (credentials files, HTTP headers, XML values) and messages.
#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace etcdadm {

// `s` without leading and trailing ASCII whitespace (space, \t, \r, \n, \v, \f).
inline std::string trim_space(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(kSpace);
  return std::string(s.substr(b, e - b + 1));
}

// `s` with ASCII letters in lower case (header names, schemes, hex).
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// A member, cluster or lease ID as etcdctl prints it: lower-case hex without leading zeros.
inline std::string id_hex(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(id));
  return buf;
}

// The ID id_hex printed (1 to 16 hex digits, either case); nullopt for anything else.
inline std::optional<uint64_t> parse_id_hex(std::string_view s) {
  if (s.empty() || s.size() > 16) return std::nullopt;
  uint64_t id = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return std::nullopt;
    id = id << 4 | static_cast<uint64_t>(d);
  }
  return id;
}

// The first of `values` that is not empty, else "" (a flag, then environment variables, then a default).
inline std::string first_non_empty(std::initializer_list<std::string> values) {
  for (const auto& v : values) {
    if (!v.empty()) return v;
  }
  return "";
}

// The items of a comma-separated list (--endpoints, --initial-cluster, peer URLs), each trimmed
// with trim_space; empty items are dropped.
inline std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    std::string item = trim_space(s.substr(start, end - start));
    if (!item.empty()) out.push_back(std::move(item));
    start = end + 1;
  }
  return out;
}

// The items joined with ", " (recipient lists, names in messages).
inline std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Permission bits as chmod and ls -l's octal show them: 0600, 0755, 4755.
inline std::string octal_mode(uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

// A byte count for people: "812 B", "12.3 MiB" (binary units, one decimal).
inline std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace etcdadm

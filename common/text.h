// Small text helpers shared by the parsers (credentials files, HTTP headers, XML values) and messages.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace etcdadm {

// `s` without leading and trailing ASCII whitespace (space, \t, \r, \n, \v, \f).
inline std::string trim_space(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(kSpace);
  return std::string(s.substr(b, e - b + 1));
}

// Permission bits as chmod and ls -l's octal show them: 0600, 0755, 4755.
inline std::string octal_mode(uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

}  // namespace etcdadm

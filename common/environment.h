// The process environment as credential lookups see it (variables and the home directory), so
// tests can hand in their own instead of mutating the real one.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace etcdadm {

struct Environment {
  std::function<std::optional<std::string>(const std::string&)> get;
  std::string home;
  static Environment from_process();
  // Value of the variable, or "" when unset.
  std::string value(const std::string& name) const;
};

}  // namespace etcdadm

#include "common/environment.h"

#include <cstdlib>

namespace etcdadm {

Environment Environment::from_process() {
  Environment env;
  env.get = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  const char* home = std::getenv("HOME");
  env.home = home != nullptr ? home : "";
  return env;
}

std::string Environment::value(const std::string& name) const {
  if (!get) return "";
  auto v = get(name);
  return v ? *v : "";
}

}  // namespace etcdadm

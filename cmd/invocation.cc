#include "cmd/invocation.h"

#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "common/shell.h"

namespace etcdadm::cli {

namespace {

std::vector<std::string>& args() {
  static std::vector<std::string> a;
  return a;
}

}  // namespace

void remember_invocation(int argc, char** argv) { args().assign(argv, argv + argc); }

std::string invocation_with(const std::string& from, const std::string& to) {
  std::string out;
  bool replaced = false;
  bool mask_next = false;
  for (size_t i = 0; i < args().size(); ++i) {
    std::string a = args()[i];
    if (i == 0) a = "etcdadm";
    if (mask_next) {
      a = "...";
      mask_next = false;
    } else if (a == "--password") {
      mask_next = true;
    } else if (a.rfind("--password=", 0) == 0) {
      a = "--password=...";
    } else if (!replaced && i > 0 && a == from) {
      a = to;
      replaced = true;
    }
    out += (out.empty() ? "" : " ") + shell_quote(a);
  }
  return out;
}

std::function<std::string(const std::string& name)> same_command_for(const std::string& query) {
  return [query](const std::string& name) { return invocation_with(query, name); };
}

std::string user_at_host() {
  const char* user = std::getenv("USER");
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return std::string(user != nullptr && *user ? user : "?") + "@" + host;
}

}  // namespace etcdadm::cli

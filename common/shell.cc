#include "common/shell.h"

namespace etcdadm {

std::string shell_quote(const std::string& s) {
  static const char* const kSafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./:=,@+%";
  if (!s.empty() && s.find_first_not_of(kSafe) == std::string::npos) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace etcdadm

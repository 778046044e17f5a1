#include "test/support/skips.h"

#include <cstdlib>
#include <string>

namespace etcdadm::test {

bool running_under_ci() {
  const char* ci = std::getenv("CI");
  if (!ci) return false;
  std::string v = ci;
  return !v.empty() && v != "0" && v != "false";
}

}  // namespace etcdadm::test

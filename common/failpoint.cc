#include "common/failpoint.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace etcdadm {

void failpoint(const char* name) {
  const char* list = std::getenv("ETCDADM_FAILPOINTS");
  if (list == nullptr) return;
  const std::string all = std::string(",") + list + ",";
  if (all.find(std::string(",") + name + ",") == std::string::npos) return;
  spdlog::warn("failpoint {}: dying now (ETCDADM_FAILPOINTS)", name);
  spdlog::default_logger()->flush();
  ::kill(::getpid(), SIGKILL);
}

}  // namespace etcdadm

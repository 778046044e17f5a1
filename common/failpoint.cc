#include "common/failpoint.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/fs.h"
#include "common/interrupt.h"

namespace etcdadm {

namespace {

// ETCDADM_FAILPOINTS parsed once, the first time any failpoint is reached: name -> action
// ("kill" when only the name is given). Failpoints sit in per-chunk loops (the snapshot stream, a
// fetch), so each later call costs a map lookup when the variable is set and a check of an empty
// map when it is not, never a walk of the environment.
const std::map<std::string, std::string>& listed_failpoints() {
  static const std::map<std::string, std::string> listed = [] {
    std::map<std::string, std::string> out;
    const char* env = std::getenv("ETCDADM_FAILPOINTS");
    std::string all = env ? env : "";
    size_t pos = 0;
    while (pos < all.size()) {
      size_t end = all.find(',', pos);
      if (end == std::string::npos) end = all.size();
      std::string entry = all.substr(pos, end - pos);
      size_t eq = entry.find('=');
      if (!entry.empty()) out[entry.substr(0, eq)] = eq == std::string::npos ? "kill" : entry.substr(eq + 1);
      pos = end + 1;
    }
    return out;
  }();
  return listed;
}

void pause_here(const std::string& name, const std::atomic<bool>* cancel) {
  // Once per name and process: a failpoint inside a loop pauses at its first pass only.
  static std::mutex mu;
  static std::set<std::string> paused;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!paused.insert(name).second) return;
  }
  const char* dir = std::getenv("ETCDADM_FAILPOINT_DIR");
  if (dir != nullptr && *dir != '\0') {
    std::string file = name;
    for (char& c : file) {
      if (c == '/') c = '.';
    }
    write_file_atomic(std::string(dir) + "/" + file, std::to_string(::getpid()) + "\n");
  }
  spdlog::warn("failpoint {}: paused until a signal (ETCDADM_FAILPOINTS)", name);
  spdlog::default_logger()->flush();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!interrupted() && !(cancel != nullptr && cancel->load())) {
    if (std::chrono::steady_clock::now() > give_up) {
      spdlog::warn("failpoint {}: no signal came in 120 s; going on", name);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

void failpoint(const char* name, const std::atomic<bool>* cancel) {
  const auto& listed = listed_failpoints();
  if (listed.empty()) return;
  auto it = listed.find(name);
  if (it == listed.end()) return;
  const std::string& action = it->second;
  if (action == "pause") {
    pause_here(name, cancel);
    return;
  }
  if (action != "kill") {
    spdlog::warn("failpoint {}: unknown action '{}' in ETCDADM_FAILPOINTS (kill, pause); ignored", name, action);
    return;
  }
  spdlog::warn("failpoint {}: dying now (ETCDADM_FAILPOINTS)", name);
  spdlog::default_logger()->flush();
  ::kill(::getpid(), SIGKILL);
}

}  // namespace etcdadm

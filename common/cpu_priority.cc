#include "common/cpu_priority.h"

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace etcdadm {

namespace {
int clamp_nice(int nice) { return std::clamp(nice, 0, 19); }
}  // namespace

int current_thread_nice() {
  errno = 0;
  int n = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  return errno == 0 ? n : 0;
}

void set_current_thread_nice(int nice) { ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), clamp_nice(nice)); }

void set_process_nice(int nice) {
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) {
    set_current_thread_nice(nice);
    return;
  }
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(std::atoi(e->d_name)), clamp_nice(nice));
  }
  ::closedir(d);
}

ScopedBatchScheduling::ScopedBatchScheduling() {
  if (::sched_getscheduler(0) != SCHED_OTHER) return;  // leave real-time, idle or batch threads alone
  sched_param param{};
  switched_ = ::sched_setscheduler(0, SCHED_BATCH, &param) == 0;
}

ScopedBatchScheduling::~ScopedBatchScheduling() {
  if (!switched_) return;
  sched_param param{};
  ::sched_setscheduler(0, SCHED_OTHER, &param);
}

}  // namespace etcdadm

#include "common/cpu_priority.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace etcdadm {
namespace {

int policy_of_new_thread() {
  int policy = -1;
  std::thread t([&] { policy = ::sched_getscheduler(0); });
  t.join();
  return policy;
}

TEST(CpuPriority, BatchSchedulingIsScopedAndInheritedByNewThreads) {
  ASSERT_EQ(::sched_getscheduler(0), SCHED_OTHER);
  {
    ScopedBatchScheduling batch;
    EXPECT_EQ(::sched_getscheduler(0), SCHED_BATCH);
    // The save's compression worker is created inside the scope and must run as a batch thread too.
    EXPECT_EQ(policy_of_new_thread(), SCHED_BATCH);
  }
  EXPECT_EQ(::sched_getscheduler(0), SCHED_OTHER);
  EXPECT_EQ(policy_of_new_thread(), SCHED_OTHER);
}

TEST(CpuPriority, NiceValuesAreClampedAndPerThread) {
  int before = current_thread_nice();
  std::thread t([] {
    set_current_thread_nice(25);  // clamped to the lowest priority
    EXPECT_EQ(current_thread_nice(), 19);
  });
  t.join();
  EXPECT_EQ(current_thread_nice(), before);
}

}  // namespace
}  // namespace etcdadm

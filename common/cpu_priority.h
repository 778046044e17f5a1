// CPU priority (nice values) of this process's threads. On Linux a nice value belongs to a thread,
// and a new thread starts with the value of the thread that created it.
//
// Why etcdadm uses it: a backup usually runs on the host of the etcd member it reads, and etcd
// itself needs more than a core to serve a snapshot stream. The save's compression worker runs
// 10 nice levels lower, the save runs SCHED_BATCH (below), and `backup save --nice` lowers the
// whole save (measured in bench/docs/save_restore_bench.md).
#pragma once

namespace etcdadm {

int current_thread_nice();
// Best effort: lowering priority always works; raising it needs CAP_SYS_NICE, and a refusal is
// ignored (the thread keeps its lower priority). Values are clamped to 0..19.
void set_current_thread_nice(int nice);
// Every thread that exists now; threads created later inherit from their creator.
void set_process_nice(int nice);

// While it lives, the creating thread runs under SCHED_BATCH (and threads it creates meanwhile
// inherit that): a batch thread that wakes up does not preempt the thread running on its CPU.
// The save's receiving thread wakes up for every chunk of the snapshot stream; under the default
// policy each wake-up preempts the etcd threads producing that stream on the same two cores, and
// the whole save runs ~10% slower (bench/docs/save_restore_bench.md). Unlike a nice value, the policy can be
// restored without privileges, so a long-running process (the sidecar) gets its thread back
// unchanged. Best effort: a thread that cannot switch keeps its policy.
class ScopedBatchScheduling {
 public:
  ScopedBatchScheduling();
  ~ScopedBatchScheduling();
  ScopedBatchScheduling(const ScopedBatchScheduling&) = delete;
  ScopedBatchScheduling& operator=(const ScopedBatchScheduling&) = delete;

 private:
  bool switched_ = false;
};

}  // namespace etcdadm

// SIGINT and SIGTERM for one-shot commands. Outside interruptible work they act as always (the
// process dies at once). While an InterruptibleWork scope is alive (a save, a fetch, a restore), the
// first signal only asks the work to stop: the work notices at its next chunk or poll
// (throw_if_interrupted), unwinds, and its RAII owners remove everything it wrote (temp files,
// unfinished uploads, staging directories); cmd/ then exits with 128 + the signal (130, 143).
// A second signal ends the process at once, as without a scope.
#pragma once

#include <atomic>
#include <string>

namespace etcdadm {

// Installs the handlers (cmd/ main, before any thread starts).
void install_interrupt_handlers();

class InterruptibleWork {
 public:
  InterruptibleWork();
  ~InterruptibleWork();
  InterruptibleWork(const InterruptibleWork&) = delete;
  InterruptibleWork& operator=(const InterruptibleWork&) = delete;
};

// 0, or the signal that asked the work to stop.
int interrupt_signal();
// Becomes true with the first signal inside interruptible work (for SaveOptions::cancel, RunOptions::cancel).
const std::atomic<bool>* interrupt_requested();
// Throws Error(kInterrupted, "<what> interrupted by SIGINT|SIGTERM") once a stop was asked for.
void throw_if_interrupted(const std::string& what);
// One atomic load, for per-chunk loops: build the message only when it is needed,
// `if (interrupted()) throw_if_interrupted("backup " + name);`.
inline bool interrupted() { return interrupt_requested()->load(std::memory_order_relaxed); }

}  // namespace etcdadm

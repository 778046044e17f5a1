#include "common/interrupt.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"

namespace etcdadm {

namespace {

std::atomic<int> g_depth{0};
std::atomic<int> g_signal{0};
std::atomic<bool> g_requested{false};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "used from a signal handler");

void on_signal(int sig) {
  if (g_depth.load() == 0 || g_requested.load()) {
    // Nothing to clean up, or asked twice: die of the signal as if no handler were installed.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  g_signal.store(sig);
  g_requested.store(true);
  const char msg[] = "etcdadm: interrupted; stopping and removing what this run wrote (again to abort at once)\n";
  ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa;
  ::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // reads and writes resume; poll() loops see EINTR and check the flag
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

InterruptibleWork::InterruptibleWork() { g_depth.fetch_add(1); }
InterruptibleWork::~InterruptibleWork() { g_depth.fetch_sub(1); }

int interrupt_signal() { return g_signal.load(); }

const std::atomic<bool>* interrupt_requested() { return &g_requested; }

void throw_if_interrupted(const std::string& what) {
  if (!g_requested.load()) return;
  int sig = g_signal.load();
  throw Error(ErrorKind::kInterrupted, what + " interrupted by " + (sig == SIGTERM ? "SIGTERM" : "SIGINT"),
              "nothing of it was kept; run it again when ready");
}

}  // namespace etcdadm

#include "sidecar/signals.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "store/blob_capabilities.h"

namespace etcdadm {

namespace {
void reload_all(const std::vector<BlobStore*>& stores) {
  spdlog::info("SIGHUP: store credentials will be read again from their source");
  for (BlobStore* store : stores) {
    if (store) reload_credentials(*store);
  }
}
}  // namespace

SidecarSignals::SidecarSignals() {
  sigemptyset(&signals_);
  for (int s : {SIGTERM, SIGINT, SIGUSR1, SIGHUP}) sigaddset(&signals_, s);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

void SidecarSignals::run(Sidecar& sidecar, const std::vector<BlobStore*>& stores) {
  std::thread waiter([&] {
    for (;;) {
      int sig = 0;
      if (sigwait(&signals_, &sig) != 0) continue;
      if (sig == SIGUSR1) {
        sidecar.trigger("SIGUSR1");
      } else if (sig == SIGHUP) {
        reload_all(stores);
      } else {
        spdlog::info("{}: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        sidecar.stop();
        return;
      }
    }
  });
  try {
    sidecar.run();
  } catch (...) {
    // Wake the waiter (it is in sigwait) so it can be joined, then report the error.
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    throw;
  }
  waiter.join();
}

void SidecarSignals::wait_for_stop(const std::function<void()>& stop, const std::vector<BlobStore*>& stores) {
  for (;;) {
    int sig = 0;
    if (sigwait(&signals_, &sig) != 0) continue;
    if (sig == SIGHUP) {
      reload_all(stores);
    } else if (sig == SIGUSR1) {
      spdlog::info("SIGUSR1: no backups in this process (--no-backups): ignored");
    } else {
      spdlog::info("{}: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      stop();
      return;
    }
  }
}

}  // namespace etcdadm

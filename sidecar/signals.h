// The signals a sidecar process obeys: SIGTERM and SIGINT stop it (a running backup may finish
// within the shutdown grace), SIGUSR1 triggers a backup, SIGHUP makes the stores read their
// credentials again from their source. A dedicated thread waits for them (sigwait), so no handler
// runs inside a backup.
#pragma once

#include <signal.h>

#include <functional>
#include <vector>

#include "sidecar/sidecar.h"
#include "store/blob_store.h"

namespace etcdadm {

class SidecarSignals {
 public:
  // Blocks the four signals in the calling thread and so in every thread it starts later: construct
  // it before any other thread exists.
  SidecarSignals();
  // Runs the sidecar until a stop signal has stopped it; rethrows what the sidecar threw. `stores`
  // (null entries skipped) are those SIGHUP reloads.
  void run(Sidecar& sidecar, const std::vector<BlobStore*>& stores);
  // Without a sidecar (`etcdadm auto --no-backups`): waits for SIGTERM or SIGINT and calls
  // `stop`; SIGHUP reloads `stores`' credentials, SIGUSR1 is logged and ignored. A stop by signal is
  // the service's normal end: the process exits 0, as the sidecar's does.
  void wait_for_stop(const std::function<void()>& stop, const std::vector<BlobStore*>& stores);

 private:
  sigset_t signals_;
};

}  // namespace etcdadm

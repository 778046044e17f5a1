// The sidecar's HTTP endpoint (cpp-httplib):
//   GET  /healthz   200 while the process runs
//   GET  /readyz    200 when the newest backup is younger than --ready-max-age, else 503 + reason
//   GET  /metrics   Prometheus text format
//   GET  /backups   the store's backups (JSON, from the catalog)
//   POST /backup    run a backup now. Needs "Authorization: Bearer <token>" when a token is set;
//                   a token is required when listening beyond loopback.
// Bounds: one request per connection, read within 32 KiB and 10 s (cpp-httplib 0.11 does not
// bound the number of header lines); request bodies up to 4 KiB (413 beyond); 50 requests a
// second (burst 100; 429 beyond); wrong tokens one a second after a burst of 5 (429 without
// checking).
// Error bodies are fixed short texts: no exception text, path or store name (those go to the log).
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "backup/sidecar.h"

namespace httplib {
class Server;
}

namespace etcdadm {

// The bearer token in `path` (surrounding whitespace dropped). Throws when unreadable or empty.
std::string read_trigger_token(const std::string& path);

class SidecarHttp {
 public:
  // `listen` is "host:port". Throws Error(kInvalidArgument) for a non-loopback address without a
  // token, Error(kUnavailable) when the port cannot be bound.
  SidecarHttp(Sidecar& sidecar, const std::string& listen, std::string token);
  ~SidecarHttp();  // stops serving
  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace etcdadm

// The sidecar's HTTP endpoint (cpp-httplib):
//   GET  /healthz   200 while the process runs
//   GET  /readyz    200 when the newest backup is younger than --ready-max-age, else 503 + reason
//   GET  /metrics   Prometheus text format
//   GET  /backups   the store's backups (JSON, from the catalog)
//   POST /backup    run a backup now (GET: 405). Needs "Authorization: Bearer <token>" (scheme in any
//                   case) when a token is set;
//                   a token is required when listening beyond loopback.
// Bounds: connections are accepted and read by BoundedHttpServer (sidecar/bounded_http.h: one
// request per connection, read within 32 KiB and 10 s, at most 128 open, idle ones cost no
// worker); request bodies up to 4 KiB (413 beyond); 50 requests a second but /healthz (burst 100;
// 429 beyond); wrong tokens one a second after a burst of 5 (429 without checking).
// Error bodies are fixed short texts: no exception text, path or store name (those go to the log).
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "sidecar/sidecar.h"

namespace etcdadm {

class HttpRouter;
class BoundedHttpServer;

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
  std::unique_ptr<HttpRouter> router_;
  std::unique_ptr<BoundedHttpServer> front_;  // after router_: destroyed (stopped) before it
  int port_ = 0;
};

}  // namespace etcdadm

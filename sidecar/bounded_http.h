// The sidecar's HTTP front: cpp-httplib routes and answers requests, but does not accept or read
// connections. Its own server (Debian's 0.11) hands every accepted connection to a worker of a
// fixed pool through an unbounded queue, and the worker then waits for the request: a handful of
// idle sockets held every worker for their 10 s each while the rest queued, /healthz stopped
// answering and the liveness probe restarted the sidecar. Here one poll loop accepts connections
// and reads their requests, so an idle or slow client costs a descriptor and a buffer, never a
// worker; a request reaches a worker once its headers are in, and is served from what was read.
//
// Bounds (HttpBounds): open connections (a new one closes the one open longest, which has not
// sent a whole request); bytes and time per connection (32 KiB, 10 s); after the headers, 1 s for
// the rest of the request (a body); workers; requests waiting for a worker (beyond it: 503).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace etcdadm {

// cpp-httplib's server used only to route and answer one request read by BoundedHttpServer.
class HttpRouter : public httplib::Server {
 public:
  // Serves the request on `stream`; the caller closes the connection.
  bool serve(httplib::Stream& stream);
};

struct HttpBounds {
  size_t max_connections = 128;
  size_t read_budget = 32 * 1024;  // request line + headers + a 4 KiB body
  std::chrono::milliseconds connection_deadline{10000};
  std::chrono::milliseconds body_wait{1000};
  int workers = 4;
  size_t max_queued = 64;
};

class BoundedHttpServer {
 public:
  // Listens on host:port (0: a free port) and serves until destroyed. Throws Error(kUnavailable)
  // when the address cannot be bound.
  BoundedHttpServer(HttpRouter& router, const std::string& host, int port, HttpBounds bounds = {});
  ~BoundedHttpServer();  // stops: every connection closed, every thread joined
  BoundedHttpServer(const BoundedHttpServer&) = delete;
  BoundedHttpServer& operator=(const BoundedHttpServer&) = delete;
  int port() const { return port_; }

  // A connection whose request headers are in (or whose budget is spent), for a worker.
  struct Request {
    int fd = -1;
    std::string received;
    std::chrono::steady_clock::time_point deadline;  // the connection's
  };

 private:
  void poll_loop();
  void work();
  void hand_off(Request r);

  HttpRouter& router_;
  const HttpBounds bounds_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the poll loop to stop
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Request> queue_;
  std::thread loop_;
  std::vector<std::thread> workers_;
};

}  // namespace etcdadm

// A fault-injecting TCP proxy for the object-store tests: sits on a port in front of a real server
// (on loopback, or on the address given: a NetnsLab's bridge, for hosts in namespaces) and, per accepted connection, either passes bytes through or injects one planned
// fault: an HTTP 503 SlowDown answer, a connection reset after N bytes in either direction, or a
// stall (accept, then never answer). Planned faults apply to the next connections in order;
// after them, and when no plan is queued, connections pass through untouched. One more fault is
// aimed at a request rather than a connection: lose_answer_to() lets a request through to the
// server and cuts the connection as its answer comes back (the server did it; the client cannot
// know). And one is aimed at every answer: set_latency() delays each chunk of the server's bytes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace etcdadm::test {

class FaultProxy {
 public:
  enum class Fault { kNone, kHttp503, kResetAfterUpload, kResetAfterDownload, kStall };
  struct Plan {
    Fault fault = Fault::kNone;
    uint64_t after_bytes = 0;  // for the reset faults
  };

  FaultProxy(std::string upstream_host, int upstream_port, std::string listen_address = "127.0.0.1");
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  std::string url() const { return "http://" + listen_address_ + ":" + std::to_string(port_); }
  void queue(const std::vector<Plan>& plans);
  // Every connection gets `plan` until cleared (for "retry budget exhausted" tests, and a store
  // that is down for a while); open pass-through connections are reset on their next byte, and a
  // stalled connection is reset when cleared (the store came back).
  void fail_all(Plan plan);
  // Each chunk of the server's answers is held back this long (0: none).
  void set_latency(std::chrono::milliseconds latency) { latency_ms_ = static_cast<int>(latency.count()); }
  void clear();
  // The first request after this call whose request line contains `request_line_part` reaches the
  // server whole; the connection is reset when the first byte of the answer arrives (counted in
  // faults_injected()). Once.
  void lose_answer_to(std::string request_line_part);
  int faults_injected() const { return injected_.load(); }
  int connections() const { return connections_.load(); }
  // The HTTP requests passed through ("GET /bucket?list-type=2&... HTTP/1.1"), in arrival order: how
  // many requests a command made, and which (each connection's bytes read as HTTP/1.1 requests).
  std::vector<std::string> requests() const;
  void clear_requests();

 private:
  void accept_loop();
  void serve(int client_fd, Plan plan);
  Plan next_plan();

  std::string listen_address_;
  std::atomic<int> latency_ms_{0};
  std::string upstream_host_;
  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  int stop_pipe_[2] = {-1, -1};
  std::mutex mu_;
  std::deque<Plan> plans_;
  Plan fail_all_{};
  std::atomic<bool> failing_all_{false};
  std::atomic<int> injected_{0};
  std::atomic<int> connections_{0};
  std::atomic<bool> stopping_{false};
  mutable std::mutex requests_mu_;
  std::vector<std::string> requests_;
  struct RequestParser {
    std::string buffer;
    uint64_t body_left = 0;
    bool chunked = false;
  };
  // Notes the requests in `data`; true when one of them is the one whose answer is to be lost.
  bool note_requests(RequestParser& parser, const char* data, size_t size);
  std::string lose_answer_to_;  // guarded by mu_; "" when none
  std::thread acceptor_;
  std::vector<std::thread> workers_;
};

}  // namespace etcdadm::test

#include "backup/sidecar_http.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include <memory>

#include "common/error.h"
#include "common/fs.h"
#include "common/text.h"
#include "common/token_bucket.h"

namespace etcdadm {

namespace {

// Bounds on what a client may make the sidecar do: nothing it serves needs a request body, and
// Prometheus scrapes and kubelet probes come a few times a minute.
constexpr size_t kMaxRequestBody = 4096;
constexpr double kRequestsPerSecond = 50, kRequestBurst = 100;
// Wrong or missing trigger tokens: after a burst, one guess per second, so that the token cannot
// be brute-forced over the network whatever its length.
constexpr double kAuthFailuresPerSecond = 1, kAuthFailureBurst = 5;

// Compares in time independent of where the strings differ (the length of the expected one leaks,
// which the token's entropy, not its length, protects).
bool same_secret(const std::string& given, const std::string& expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
  }
  return diff == 0;
}

// What one connection may make the server read, and for how long: cpp-httplib 0.11 (Debian 12)
// bounds each header line (8 KiB) but not their number, so a client sending header lines without
// end grew the sidecar without bound (2.7 GB of RSS after 20 s, measured). Every connection now
// carries one request, read through this budget and deadline.
constexpr size_t kConnectionReadBudget = 32 * 1024;  // request line + headers + a 4 KiB body
constexpr auto kConnectionDeadline = std::chrono::seconds(10);

// A socket read through a byte budget and a deadline for the whole connection (cpp-httplib's own
// stream times out per read only, so a slow sender could hold a worker forever).
class BudgetedSocketStream : public httplib::Stream {
 public:
  BudgetedSocketStream(int fd, size_t budget, std::chrono::steady_clock::time_point deadline)
      : fd_(fd), budget_(budget), deadline_(deadline) {}
  bool is_readable() const override { return budget_ > 0 && wait_for(POLLIN); }
  bool is_writable() const override { return wait_for(POLLOUT); }
  ssize_t read(char* ptr, size_t size) override {
    if (budget_ == 0 || !wait_for(POLLIN)) return -1;  // over budget or past the deadline: cut off
    ssize_t n;
    do {
      n = ::recv(fd_, ptr, std::min(size, budget_), 0);
    } while (n < 0 && errno == EINTR);
    if (n > 0) budget_ -= static_cast<size_t>(n);
    return n;
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!wait_for(POLLOUT)) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  bool wait_for(short events) const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, events, 0};
    int r;
    do {
      r = ::poll(&p, 1, static_cast<int>(left.count()));
    } while (r < 0 && errno == EINTR);
    return r > 0;
  }
  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ip.clear();
    port = 0;
    if (get(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
    char buf[INET6_ADDRSTRLEN] = {0};
    if (a.ss_family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&a);
      ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
      port = ntohs(in->sin_port);
    } else if (a.ss_family == AF_INET6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&a);
      ::inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
      port = ntohs(in6->sin6_port);
    }
    ip = buf;
  }
  int fd_;
  size_t budget_;
  std::chrono::steady_clock::time_point deadline_;
};

// cpp-httplib's server with each accepted connection served as one request through a
// BudgetedSocketStream (the library calls this override for every connection it accepts).
class BoundedServer : public httplib::Server {
 private:
  bool process_and_close_socket(socket_t sock) override {
    BudgetedSocketStream stream(sock, kConnectionReadBudget, std::chrono::steady_clock::now() + kConnectionDeadline);
    bool connection_closed = false;
    bool ok = process_request(stream, /*close_connection=*/true, connection_closed, nullptr);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }
};

void too_many(httplib::Response& res) {
  res.status = 429;
  res.set_header("Retry-After", "1");
  res.set_content("too many requests\n", "text/plain");
}

}  // namespace

std::string read_trigger_token(const std::string& path) {
  std::string token = trim_space(read_file(path));
  if (token.empty()) throw Error(ErrorKind::kInvalidArgument, "trigger token file " + path + " is empty");
  return token;
}

SidecarHttp::SidecarHttp(Sidecar& sidecar, const std::string& listen, std::string token)
    : server_(std::make_unique<BoundedServer>()) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    throw Error(ErrorKind::kInvalidArgument, "--listen " + listen + " is not host:port", "e.g. 127.0.0.1:9791");
  }
  std::string host = listen.substr(0, colon);
  int port = std::atoi(listen.substr(colon + 1).c_str());
  bool loopback = host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]";
  if (!loopback && token.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "--listen " + listen + " is reachable beyond this host but no trigger token is set",
                "pass --trigger-token-file, or listen on 127.0.0.1");
  }
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server_->Get("/readyz", [&sidecar](const httplib::Request&, httplib::Response& res) {
    std::string why;
    bool ok = sidecar.ready(&why);
    res.status = ok ? 200 : 503;
    res.set_content(why + "\n", "text/plain");
  });
  auto auth_failures = std::make_shared<TokenBucket>(kAuthFailuresPerSecond, kAuthFailureBurst);
  // Whether `req` may go on: always without a token; with one, it must carry it (guesses throttled:
  // while they are, none is checked, the right token included).
  auto authorized = [token, auth_failures](const httplib::Request& req, httplib::Response& res) {
    if (token.empty()) return true;
    if (auth_failures->exhausted()) {
      too_many(res);
      return false;
    }
    if (same_secret(req.get_header_value("Authorization"), "Bearer " + token)) return true;
    auth_failures->try_take();
    spdlog::warn("{} {} from {} refused: missing or wrong bearer token", req.method, req.path, req.remote_addr);
    res.status = 401;
    res.set_content("missing or wrong bearer token\n", "text/plain");
    return false;
  };
  // Beyond loopback, what the sidecar knows (backup names, revisions, failure reasons, the store's
  // health) is for the token's holders too; the probes (/healthz, /readyz) stay open.
  const bool reads_need_token = !loopback;
  server_->Get("/metrics", [&sidecar, authorized, reads_need_token](const httplib::Request& req, httplib::Response& res) {
    if (reads_need_token && !authorized(req, res)) return;
    res.set_content(sidecar.metrics_text(), "text/plain; version=0.0.4");
  });
  server_->Get("/backups", [&sidecar, authorized, reads_need_token](const httplib::Request& req, httplib::Response& res) {
    if (reads_need_token && !authorized(req, res)) return;
    res.set_content(sidecar.backups_json(), "application/json");
  });
  auto trigger = [&sidecar, authorized](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    sidecar.trigger("http from " + req.remote_addr);
    res.status = 202;
    res.set_content("backup triggered\n", "text/plain");
  };
  server_->Post("/backup", trigger);
  // `curl -X POST URL` sends no body and no Content-Length, which cpp-httplib answers with an empty
  // 400 before any handler runs. The trigger needs no body: take such requests before that check
  // (only those: a request with a body still goes through the body-size check).
  auto requests = std::make_shared<TokenBucket>(kRequestsPerSecond, kRequestBurst);
  server_->set_pre_routing_handler([trigger, requests](const httplib::Request& req, httplib::Response& res) {
    if (!requests->try_take()) {
      too_many(res);
      return httplib::Server::HandlerResponse::Handled;
    }
    bool bodyless = !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding");
    if (req.method != "POST" || req.path != "/backup" || !bodyless) return httplib::Server::HandlerResponse::Unhandled;
    trigger(req, res);
    return httplib::Server::HandlerResponse::Handled;
  });
  server_->set_payload_max_length(kMaxRequestBody);  // larger bodies: 413, unread
  // Whatever a handler throws stays in the log: the body names no path, store or internal detail.
  server_->set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      spdlog::error("HTTP {} {} failed: {}", req.method, req.path, e.what());
    } catch (...) {
      spdlog::error("HTTP {} {} failed", req.method, req.path);
    }
    res.status = 500;
    res.set_content("internal error (see the sidecar's log)\n", "text/plain");
  });
  port_ = port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (port_ <= 0) throw Error(ErrorKind::kUnavailable, "cannot listen on " + listen, "is the port in use?");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // httplib's stop() does nothing until the server runs: wait for it, so the destructor can stop it.
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  spdlog::info("sidecar HTTP on {}:{} (/healthz /readyz /metrics /backups, POST /backup)", host, port_);
}

SidecarHttp::~SidecarHttp() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace etcdadm

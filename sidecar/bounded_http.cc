#include "sidecar/bounded_http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>

#include "common/error.h"

namespace etcdadm {

namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// A request's connection as cpp-httplib reads and writes it: first the bytes the poll loop read,
// then the socket, within what is left of the connection's byte budget and until `read_until`;
// writes until `write_until`. cpp-httplib's own stream times out per read only, so a slow sender
// could hold a worker for ever.
class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(int fd, std::string received, size_t budget_left, SteadyTime read_until, SteadyTime write_until)
      : fd_(fd),
        received_(std::move(received)),
        budget_(budget_left),
        read_until_(read_until),
        write_until_(write_until) {}
  bool is_readable() const override {
    return next_ < received_.size() || (budget_ > 0 && wait_for(POLLIN, read_until_));
  }
  bool is_writable() const override { return wait_for(POLLOUT, write_until_); }
  ssize_t read(char* ptr, size_t size) override {
    if (next_ < received_.size()) {
      size_t n = std::min(size, received_.size() - next_);
      std::memcpy(ptr, received_.data() + next_, n);
      next_ += n;
      return static_cast<ssize_t>(n);
    }
    for (;;) {
      if (budget_ == 0 || !wait_for(POLLIN, read_until_)) return -1;  // over budget or too late: cut off
      ssize_t n = ::recv(fd_, ptr, std::min(size, budget_), 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0) budget_ -= static_cast<size_t>(n);
      return n;
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      if (!wait_for(POLLOUT, write_until_)) return -1;
      ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      return n;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  bool wait_for(short events, SteadyTime until) const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
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
  std::string received_;
  size_t next_ = 0;
  size_t budget_;
  SteadyTime read_until_, write_until_;
};

// A listening socket on host:port (host as for getaddrinfo, brackets of an IPv6 literal dropped).
int listen_on(const std::string& host_in, int port) {
  std::string host = host_in;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw Error(ErrorKind::kUnavailable, "cannot listen on " + host_in + ":" + service + ": " + ::gai_strerror(rc));
  }
  int last_errno = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // The kernel's whole accept queue (net.core.somaxconn caps it): with 128, a burst of
    // connections the poll loop had not yet accepted filled it, and a probe's SYN was dropped and
    // sent again only after 1 s, a kubelet's whole probe timeout. The loop's own bound
    // (max_connections) still limits what is held open.
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    last_errno = errno;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  throw Error(ErrorKind::kUnavailable, "cannot listen on " + host_in + ":" + service + ": " + std::strerror(last_errno),
              "is the port in use?");
}

int bound_port(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  return 0;
}

// The blank line that ends a request's headers (cpp-httplib reads CRLF lines only).
bool headers_in(const std::string& received) { return received.find("\r\n\r\n") != std::string::npos; }

}  // namespace

bool HttpRouter::serve(httplib::Stream& stream) {
  bool connection_closed = false;
  return process_request(stream, /*close_connection=*/true, connection_closed, nullptr);
}

BoundedHttpServer::BoundedHttpServer(HttpRouter& router, const std::string& host, int port, HttpBounds bounds)
    : router_(router), bounds_(bounds) {
  listen_fd_ = listen_on(host, port);
  port_ = bound_port(listen_fd_);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    ::close(listen_fd_);
    throw Error(ErrorKind::kIo, std::string("cannot create an eventfd: ") + std::strerror(errno));
  }
  for (int i = 0; i < bounds_.workers; ++i) workers_.emplace_back([this] { work(); });
  loop_ = std::thread([this] { poll_loop(); });
}

BoundedHttpServer::~BoundedHttpServer() {
  stop_ = true;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  if (loop_.joinable()) loop_.join();
  {
    // Under the lock, so that no worker is between its check of stop_ and its wait.
    std::lock_guard<std::mutex> lock(mu_);
  }
  ready_.notify_all();
  for (auto& w : workers_) w.join();
  for (auto& r : queue_) ::close(r.fd);
  ::close(listen_fd_);
  ::close(wake_fd_);
}

void BoundedHttpServer::hand_off(Request r) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() < bounds_.max_queued) {
      queue_.push_back(std::move(r));
      ready_.notify_one();
      return;
    }
  }
  static const char kBusy[] =
      "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  [[maybe_unused]] ssize_t n = ::send(r.fd, kBusy, sizeof kBusy - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  ::close(r.fd);
}

void BoundedHttpServer::work() {
  for (;;) {
    Request r;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return stop_.load() || !queue_.empty(); });
      if (stop_) return;
      r = std::move(queue_.front());
      queue_.pop_front();
    }
    const auto now = std::chrono::steady_clock::now();
    const size_t left = bounds_.read_budget - std::min(bounds_.read_budget, r.received.size());
    ConnectionStream stream(r.fd, std::move(r.received), left, std::min(r.deadline, now + bounds_.body_wait),
                            now + bounds_.connection_deadline);
    try {
      router_.serve(stream);
    } catch (const std::exception& e) {
      spdlog::error("HTTP request failed: {}", e.what());
    }
    ::shutdown(r.fd, SHUT_RDWR);
    ::close(r.fd);
  }
}

void BoundedHttpServer::poll_loop() {
  std::list<Request> open;  // connections whose request is not in yet, oldest first
  std::vector<pollfd> fds;
  std::vector<std::list<Request>::iterator> polled;
  auto close_one = [&](std::list<Request>::iterator it) {
    ::close(it->fd);
    return open.erase(it);
  };
  while (!stop_) {
    fds.assign({{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    polled.clear();
    auto now = std::chrono::steady_clock::now();
    auto next_deadline = now + std::chrono::seconds(1);
    for (auto it = open.begin(); it != open.end(); ++it) {
      fds.push_back({it->fd, POLLIN, 0});
      polled.push_back(it);
      next_deadline = std::min(next_deadline, it->deadline);
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_deadline - now).count();
    int r = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait, 0) + 1));
    if (r < 0) {
      if (errno != EINTR) spdlog::warn("sidecar HTTP: poll failed: {}", std::strerror(errno));
      continue;
    }
    if (stop_) break;
    now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < polled.size(); ++i) {
      auto it = polled[i];
      if (fds[i + 2].revents != 0) {
        char chunk[4096];
        const size_t room = bounds_.read_budget - std::min(bounds_.read_budget, it->received.size());
        ssize_t n = ::recv(it->fd, chunk, std::min(sizeof chunk, room), MSG_DONTWAIT);
        if (n > 0) it->received.append(chunk, static_cast<size_t>(n));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          close_one(it);  // gone, or broken, before its request was in
          continue;
        }
        if (headers_in(it->received) || it->received.size() >= bounds_.read_budget) {
          hand_off(std::move(*it));  // over budget: cpp-httplib refuses what it cannot parse
          open.erase(it);
          continue;
        }
      }
      if (now >= it->deadline) close_one(it);
    }
    if (fds[1].revents != 0) {
      // A bounded number per round, so that the connections already open are read too.
      for (int accepted = 0; accepted < 64; ++accepted) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          // Out of descriptors: the connection open longest gives its own up, and the next
          // round accepts again.
          if (errno == EMFILE || errno == ENFILE) {
            if (!open.empty())
              close_one(open.begin());
            else
              std::this_thread::sleep_for(std::chrono::milliseconds(10));  // workers hold them all
          }
          break;
        }
        if (open.size() >= bounds_.max_connections) close_one(open.begin());
        open.push_back({fd, {}, now + bounds_.connection_deadline});
      }
    }
    if (fds[0].revents != 0) {
      uint64_t v;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_, &v, sizeof v);
    }
  }
  for (auto& r : open) ::close(r.fd);
}

}  // namespace etcdadm

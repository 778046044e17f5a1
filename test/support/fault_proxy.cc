#include "test/support/fault_proxy.h"

#include <cctype>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string_view>

namespace etcdadm::test {

namespace {

void reset_and_close(int fd) {
  if (fd < 0) return;
  linger l{1, 0};  // close with RST, like a dying middlebox
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

bool send_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

FaultProxy::FaultProxy(std::string upstream_host, int upstream_port, std::string listen_address)
    : listen_address_(std::move(listen_address)), upstream_host_(std::move(upstream_host)), upstream_port_(upstream_port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, listen_address_.c_str(), &addr.sin_addr) != 1) {
    throw std::runtime_error("fault proxy: no IPv4 address: " + listen_address_);
  }
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listen_fd_, 64) != 0) {
    throw std::runtime_error("fault proxy: cannot listen");
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (pipe(stop_pipe_) != 0) throw std::runtime_error("fault proxy: pipe failed");
  acceptor_ = std::thread([this] { accept_loop(); });
}

FaultProxy::~FaultProxy() {
  stopping_ = true;
  (void)!write(stop_pipe_[1], "x", 1);
  acceptor_.join();
  for (auto& t : workers_) t.join();
  close(listen_fd_);
  close(stop_pipe_[0]);
  close(stop_pipe_[1]);
}

void FaultProxy::queue(const std::vector<Plan>& plans) {
  std::lock_guard<std::mutex> lock(mu_);
  plans_.insert(plans_.end(), plans.begin(), plans.end());
}

void FaultProxy::fail_all(Plan plan) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_all_ = plan;
  failing_all_ = plan.fault != Fault::kNone;
}

void FaultProxy::lose_answer_to(std::string request_line_part) {
  std::lock_guard<std::mutex> lock(mu_);
  lose_answer_to_ = std::move(request_line_part);
}

void FaultProxy::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  lose_answer_to_.clear();
  plans_.clear();
  fail_all_ = Plan{};
  failing_all_ = false;
}

FaultProxy::Plan FaultProxy::next_plan() {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_all_.fault != Fault::kNone) return fail_all_;
  if (plans_.empty()) return Plan{};
  Plan p = plans_.front();
  plans_.pop_front();
  return p;
}

void FaultProxy::accept_loop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0 || stopping_) return;
    int c = accept(listen_fd_, nullptr, nullptr);
    if (c < 0) continue;
    ++connections_;
    Plan plan = next_plan();
    workers_.emplace_back([this, c, plan] { serve(c, plan); });
  }
}

void FaultProxy::serve(int client, Plan plan) {
  if (plan.fault != Fault::kNone) ++injected_;
  if (plan.fault == Fault::kHttp503) {
    // Read the request, body included, answer like a throttled S3, close. Reading the body first
    // makes the answer deterministic: closing with a part's body unread would reset the connection,
    // and the client would see "broken pipe" or the 503 depending on timing.
    std::string head;
    char buf[65536];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
      pollfd p{client, POLLIN, 0};
      if (poll(&p, 1, 2000) <= 0) break;
      ssize_t n = recv(client, buf, sizeof buf, 0);
      if (n <= 0) break;
      head.append(buf, static_cast<size_t>(n));
    }
    size_t head_end = head.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      size_t body_seen = head.size() - (head_end + 4), body_size = 0;
      std::string lower = head.substr(0, head_end);
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      size_t cl = lower.find("\r\ncontent-length:");
      if (cl != std::string::npos) body_size = std::stoull(lower.substr(cl + 17));
      while (body_seen < body_size) {
        pollfd p{client, POLLIN, 0};
        if (poll(&p, 1, 2000) <= 0) break;
        ssize_t n = recv(client, buf, sizeof buf, 0);
        if (n <= 0) break;
        body_seen += static_cast<size_t>(n);
      }
    }
    std::string body = "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate."
                       "</Message></Error>";
    std::string resp = "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    send_all(client, resp.data(), resp.size());
    shutdown(client, SHUT_WR);
    close(client);
    return;
  }
  if (plan.fault == Fault::kStall) {
    // Hold the connection without answering until the client gives up or the proxy stops (or,
    // for a stall of fail_all, until it is cleared: then the connection is reset).
    const bool until_cleared = failing_all_;
    char buf[65536];
    for (;;) {
      pollfd fds[2] = {{client, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
      if (poll(fds, 2, 200) < 0 || fds[1].revents != 0 || stopping_) break;
      if (until_cleared && !failing_all_) {
        reset_and_close(client);
        return;
      }
      if (fds[0].revents != 0 && recv(client, buf, sizeof buf, 0) <= 0) break;
    }
    close(client);
    return;
  }
  int up = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
  inet_pton(AF_INET, upstream_host_.c_str(), &addr.sin_addr);
  if (connect(up, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(up);
    reset_and_close(client);
    return;
  }
  uint64_t upload = 0, download = 0;
  RequestParser requests_seen;  // the client's bytes, read as a stream of HTTP requests
  bool lose_next_answer = false;  // the request just sent is the one whose answer is to be lost
  char buf[65536];
  for (;;) {
    pollfd fds[3] = {{client, POLLIN, 0}, {up, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(fds, 3, 500) < 0) break;
    if (fds[2].revents != 0 || stopping_) break;
    if (plan.fault == Fault::kNone && failing_all_) {
      reset_and_close(client);
      reset_and_close(up);
      return;
    }
    bool closed = false;
    for (int i = 0; i < 2 && !closed; ++i) {
      if (fds[i].revents == 0) continue;
      int from = i == 0 ? client : up, to = i == 0 ? up : client;
      ssize_t n = recv(from, buf, sizeof buf, 0);
      if (n <= 0) {
        closed = true;
        break;
      }
      uint64_t& count = i == 0 ? upload : download;
      Fault trigger = i == 0 ? Fault::kResetAfterUpload : Fault::kResetAfterDownload;
      size_t pass = static_cast<size_t>(n);
      bool cut = false;
      if (plan.fault == trigger && count + pass >= plan.after_bytes) {
        pass = static_cast<size_t>(plan.after_bytes > count ? plan.after_bytes - count : 0);
        cut = true;
      }
      if (i == 1 && lose_next_answer) {  // HTTP/1.1 without pipelining: this answers that request
        ++injected_;
        reset_and_close(client);
        reset_and_close(up);
        return;
      }
      if (i == 0 && pass > 0 && note_requests(requests_seen, buf, pass)) lose_next_answer = true;
      if (i == 1 && latency_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(latency_ms_.load()));
      if (pass > 0 && !send_all(to, buf, pass)) closed = true;
      count += pass;
      if (cut) {
        reset_and_close(client);
        reset_and_close(up);
        return;
      }
    }
    if (closed) break;
  }
  close(client);
  close(up);
}

bool FaultProxy::note_requests(RequestParser& p, const char* data, size_t size) {
  // HTTP/1.1 requests, one after another on the connection: a head up to its blank line (its first
  // line is the request line), then a body of Content-Length bytes or, chunked, up to its last
  // chunk. Bodies are skipped, not scanned: they may hold anything.
  p.buffer.append(data, size);
  bool aimed_at = false;
  for (;;) {
    if (p.body_left > 0) {
      size_t skip = std::min<uint64_t>(p.body_left, p.buffer.size());
      p.buffer.erase(0, skip);
      p.body_left -= skip;
      if (p.body_left > 0) return aimed_at;
    }
    if (p.chunked) {
      size_t end = p.buffer.find("\r\n0\r\n\r\n");
      if (end == std::string::npos) {
        if (p.buffer.size() > 16) p.buffer.erase(0, p.buffer.size() - 16);
        return aimed_at;
      }
      p.buffer.erase(0, end + 7);
      p.chunked = false;
    }
    size_t head_end = p.buffer.find("\r\n\r\n");
    if (head_end == std::string::npos) return aimed_at;
    std::string head = p.buffer.substr(0, head_end + 2);
    p.buffer.erase(0, head_end + 4);
    const std::string request_line = head.substr(0, head.find("\r\n"));
    {
      std::lock_guard<std::mutex> lock(requests_mu_);
      requests_.push_back(request_line);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!lose_answer_to_.empty() && request_line.find(lose_answer_to_) != std::string::npos) {
        lose_answer_to_.clear();
        aimed_at = true;
      }
    }
    std::string lower = head;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    size_t cl = lower.find("\r\ncontent-length:");
    p.body_left = cl == std::string::npos ? 0 : std::stoull(lower.substr(cl + 17));
    p.chunked = lower.find("\r\ntransfer-encoding: chunked") != std::string::npos;
    if (p.chunked) p.buffer.insert(0, "\r\n");  // the first chunk-size line follows the head directly
  }
}

std::vector<std::string> FaultProxy::requests() const {
  std::lock_guard<std::mutex> lock(requests_mu_);
  return requests_;
}

void FaultProxy::clear_requests() {
  std::lock_guard<std::mutex> lock(requests_mu_);
  requests_.clear();
}

}  // namespace etcdadm::test

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "etcd/client.h"
#include "etcd/grpc_window.h"

namespace etcdadm {
namespace {

// A TCP listener that records what a client sends first: the HTTP/2 connection preface and the
// client's SETTINGS frame, which announces the stream window (SETTINGS_INITIAL_WINDOW_SIZE, id 4).
class PrefaceRecorder {
 public:
  PrefaceRecorder() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error(std::string("listener: ") + std::strerror(errno));
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { bytes_ = accept_and_read(); });
  }
  ~PrefaceRecorder() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  // The bytes of the first connection (waits for the reader thread).
  const std::string& bytes() {
    if (thread_.joinable()) thread_.join();
    return bytes_;
  }

 private:
  std::string accept_and_read() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) return {};
    int conn = ::accept(fd_, nullptr, nullptr);
    if (conn < 0) return {};
    std::string got;
    char buf[4096];
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    // Preface (24 bytes) + one frame header (9) + its payload is all we need.
    while (std::chrono::steady_clock::now() < deadline) {
      if (got.size() >= 33) {
        size_t len = (uint8_t(got[24]) << 16) | (uint8_t(got[25]) << 8) | uint8_t(got[26]);
        if (got.size() >= 33 + len) break;
      }
      pollfd c{conn, POLLIN, 0};
      if (::poll(&c, 1, 200) != 1) continue;
      ssize_t n = ::read(conn, buf, sizeof(buf));
      if (n <= 0) break;
      got.append(buf, size_t(n));
    }
    ::close(conn);
    return got;
  }

  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::string bytes_;
};

// The SETTINGS_INITIAL_WINDOW_SIZE value of the client's first SETTINGS frame, if it has one.
std::optional<uint32_t> announced_stream_window(const std::string& b) {
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  if (b.size() < 33 || b.compare(0, preface.size(), preface) != 0) return std::nullopt;
  size_t len = (uint8_t(b[24]) << 16) | (uint8_t(b[25]) << 8) | uint8_t(b[26]);
  if (uint8_t(b[27]) != 0x4 || b.size() < 33 + len) return std::nullopt;  // not a SETTINGS frame
  for (size_t i = 33; i + 6 <= 33 + len; i += 6) {
    uint16_t id = uint16_t((uint8_t(b[i]) << 8) | uint8_t(b[i + 1]));
    uint32_t v = (uint32_t(uint8_t(b[i + 2])) << 24) | (uint32_t(uint8_t(b[i + 3])) << 16) |
                 (uint32_t(uint8_t(b[i + 4])) << 8) | uint32_t(uint8_t(b[i + 5]));
    if (id == 0x4) return v;
  }
  return std::nullopt;
}

}  // namespace

// gRPC 1.51 would announce a BDP-driven window (4 MiB at first, growing to 32 MiB); every
// EtcdClient channel must announce the pinned one from its first SETTINGS frame on, or a fast
// member can make a save buffer tens of MiB (grpc_window.h).
TEST(Http2Window, EveryChannelAnnouncesThePinnedStreamWindow) {
  PrefaceRecorder server;
  ConnectionConfig config;
  config.endpoints = {"http://127.0.0.1:" + std::to_string(server.port())};
  config.dial_timeout = std::chrono::milliseconds(1500);
  config.command_timeout = std::chrono::milliseconds(1500);
  EtcdClient client(config);
  // The recorder never answers, so the call fails; only what the client sent matters.
  EXPECT_ANY_THROW(client.status(config.endpoints[0]));
  auto window = announced_stream_window(server.bytes());
  ASSERT_TRUE(window.has_value()) << "no SETTINGS_INITIAL_WINDOW_SIZE in the client's first SETTINGS frame ("
                                  << server.bytes().size() << " bytes received)";
  EXPECT_EQ(*window, kHttp2StreamWindowBytes);
}

}  // namespace etcdadm

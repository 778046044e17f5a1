// A small in-process HTTP server (cpp-httplib) on a free loopback port, for protocol fixtures that
// stand in for services that cannot run here (STS, EC2/GCE metadata, a GCS resumable-upload
// endpoint). Tests register handlers on `server`, then call start(); the destructor stops it.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

namespace etcdadm::test {

class FixtureServer {
 public:
  FixtureServer() { port_ = server.bind_to_any_port("127.0.0.1"); }
  void start() {
    thread_ = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FixtureServer() {
    server.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string host_port() const { return "127.0.0.1:" + std::to_string(port_); }
  httplib::Server server;

 private:
  int port_ = 0;
  std::thread thread_;
};

}  // namespace etcdadm::test

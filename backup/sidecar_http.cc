#include "backup/sidecar_http.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <cctype>

#include "common/error.h"
#include "common/fs.h"

namespace etcdadm {

std::string read_trigger_token(const std::string& path) {
  std::string token = read_file(path);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.front()))) token.erase(token.begin());
  if (token.empty()) throw Error(ErrorKind::kInvalidArgument, "trigger token file " + path + " is empty");
  return token;
}

SidecarHttp::SidecarHttp(Sidecar& sidecar, const std::string& listen, std::string token)
    : server_(std::make_unique<httplib::Server>()) {
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
  server_->Get("/metrics", [&sidecar](const httplib::Request&, httplib::Response& res) {
    res.set_content(sidecar.metrics_text(), "text/plain; version=0.0.4");
  });
  server_->Get("/backups", [&sidecar](const httplib::Request&, httplib::Response& res) {
    res.set_content(sidecar.backups_json(), "application/json");
  });
  auto trigger = [&sidecar, token](const httplib::Request& req, httplib::Response& res) {
    if (!token.empty() && req.get_header_value("Authorization") != "Bearer " + token) {
      res.status = 401;
      res.set_content("missing or wrong bearer token\n", "text/plain");
      return;
    }
    sidecar.trigger("http from " + req.remote_addr);
    res.status = 202;
    res.set_content("backup triggered\n", "text/plain");
  };
  server_->Post("/backup", trigger);
  // `curl -X POST URL` sends no body and no Content-Length, which cpp-httplib answers with an empty
  // 400 before any handler runs. The trigger needs no body: take such requests before that check
  // (only those, so that a request with a body is still read whole and the connection stays sound).
  server_->set_pre_routing_handler([trigger](const httplib::Request& req, httplib::Response& res) {
    bool bodyless = !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding");
    if (req.method != "POST" || req.path != "/backup" || !bodyless) return httplib::Server::HandlerResponse::Unhandled;
    trigger(req, res);
    return httplib::Server::HandlerResponse::Handled;
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

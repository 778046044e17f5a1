#include "sidecar/sidecar_http.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <memory>

#include "common/error.h"
#include "common/fs.h"
#include "common/text.h"
#include "common/token_bucket.h"
#include "sidecar/bounded_http.h"

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

// The credentials of an "Authorization: Bearer <token>" header ("" for any other scheme). Auth
// schemes are case-insensitive (RFC 9110 §11.1): "bearer" and "BEARER" are Bearer too.
std::string bearer_credentials(const std::string& header) {
  const size_t space = header.find(' ');
  if (space != 6) return "";
  for (size_t i = 0; i < 6; ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != "bearer"[i]) return "";
  }
  size_t start = header.find_first_not_of(' ', space);
  return start == std::string::npos ? "" : header.substr(start);
}

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
    : router_(std::make_unique<HttpRouter>()) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    throw Error(ErrorKind::kInvalidArgument, "--listen " + listen + " is not host:port", "e.g. 127.0.0.1:9791");
  }
  std::string host = listen.substr(0, colon);
  int port = std::atoi(listen.substr(colon + 1).c_str());
  bool loopback = host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]";
  if (!loopback && token.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "--listen " + listen + " is reachable beyond this host but no trigger token is set",
                "pass --trigger-token-file, or listen on 127.0.0.1");
  }
  router_->Get("/healthz",
               [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  router_->Get("/readyz", [&sidecar](const httplib::Request&, httplib::Response& res) {
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
    if (same_secret(bearer_credentials(req.get_header_value("Authorization")), token)) return true;
    auth_failures->try_take();
    spdlog::warn("{} {} from {} refused: missing or wrong bearer token", req.method, req.path, req.remote_addr);
    res.status = 401;
    res.set_content("missing or wrong bearer token\n", "text/plain");
    return false;
  };
  // Beyond loopback, what the sidecar knows (backup names, revisions, failure reasons, the store's
  // health) is for the token's holders too; the probes (/healthz, /readyz) stay open.
  const bool reads_need_token = !loopback;
  router_->Get("/metrics",
               [&sidecar, authorized, reads_need_token](const httplib::Request& req, httplib::Response& res) {
                 if (reads_need_token && !authorized(req, res)) return;
                 res.set_content(sidecar.metrics_text(), "text/plain; version=0.0.4");
               });
  router_->Get("/backups",
               [&sidecar, authorized, reads_need_token](const httplib::Request& req, httplib::Response& res) {
                 if (reads_need_token && !authorized(req, res)) return;
                 res.set_content(sidecar.backups_json(), "application/json");
               });
  auto trigger = [&sidecar, authorized](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    sidecar.trigger("http from " + req.remote_addr);
    res.status = 202;
    res.set_content("backup triggered\n", "text/plain");
  };
  router_->Post("/backup", trigger);
  // The trigger exists, for POST only: 405 naming it, not 404 as for a path that does not exist.
  router_->Get("/backup", [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "POST");
    res.set_content("method not allowed: POST /backup triggers a backup\n", "text/plain");
  });
  // `curl -X POST URL` sends no body and no Content-Length, which cpp-httplib answers with an empty
  // 400 before any handler runs. The trigger needs no body: take such requests before that check
  // (only those: a request with a body still goes through the body-size check).
  auto requests = std::make_shared<TokenBucket>(kRequestsPerSecond, kRequestBurst);
  router_->set_pre_routing_handler([trigger, requests](const httplib::Request& req, httplib::Response& res) {
    // The liveness probe's answer costs nothing: a flood of other requests never makes it fail.
    if (req.path == "/healthz") return httplib::Server::HandlerResponse::Unhandled;
    if (!requests->try_take()) {
      too_many(res);
      return httplib::Server::HandlerResponse::Handled;
    }
    bool bodyless = !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding");
    if (req.method != "POST" || req.path != "/backup" || !bodyless) return httplib::Server::HandlerResponse::Unhandled;
    trigger(req, res);
    return httplib::Server::HandlerResponse::Handled;
  });
  router_->set_payload_max_length(kMaxRequestBody);  // larger bodies: 413, unread
  // Whatever a handler throws stays in the log: the body names no path, store or internal detail.
  router_->set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
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
  front_ = std::make_unique<BoundedHttpServer>(*router_, host, port);
  port_ = front_->port();
  spdlog::info("sidecar HTTP on {}:{} (/healthz /readyz /metrics /backups, POST /backup)", host, port_);
}

SidecarHttp::~SidecarHttp() = default;  // the front stops first (declared last), then the routes go

}  // namespace etcdadm

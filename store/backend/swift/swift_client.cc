#include "store/backend/swift/swift_client.h"

#include "common/error.h"
#include "common/timefmt.h"

namespace etcdadm {

Error swift_error(const HttpResponse& response, const std::string& what, const std::string& auth_description) {
  long st = response.status;
  std::string body = response.body.substr(0, 200);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  std::string text = what + ": HTTP " + std::to_string(st) + (body.empty() ? "" : ": " + body);
  if (st >= 500 || st == 429 || st == 408 || st == 498)
    return Error(ErrorKind::kUnavailable, text, "Swift is busy or failing; retried with backoff");
  if (st == 401 || st == 403) {
    return Error(ErrorKind::kAuth, text,
                 "not allowed with " + auth_description +
                     ": the user needs a role with write access to the container (e.g. member)");
  }
  if (st == 404) return Error(ErrorKind::kNotFound, text, "check the container name (etcdadm never creates it)");
  if (st == 412) return Error(ErrorKind::kAlreadyExists, text);
  return Error(ErrorKind::kInvalidArgument, text);
}

SwiftClient::SwiftClient(std::shared_ptr<SwiftSession> session, RetryPolicy retry)
    : session_(std::move(session)),
      http_(session_->http(), retry,
            ObjectHttp::Protocol{.classify =
                                     [this](const HttpResponse& r, const std::string& what) {
                                       return swift_error(r, what, session_->config().description);
                                     },
                                 // Swift answers an expired or revoked token with 401; a token the user gave
                                 // (OS_AUTH_TOKEN) cannot be fetched anew.
                                 .refresh_credentials =
                                     [this](const HttpResponse& refused) {
                                       if (refused.status != 401 ||
                                           session_->config().kind == SwiftAuthConfig::Kind::kPreauthenticated)
                                         return false;
                                       session_->invalidate();
                                       return true;
                                     }}) {}

std::string SwiftClient::describe(const std::string& container, const std::string& name) const {
  return "swift://" + container + (name.empty() ? "" : "/" + name);
}

HttpRequest SwiftClient::authorized(const ObjectCall& c) const {
  SwiftSession::Access a = session_->access();
  HttpRequest req;
  req.method = c.method;
  req.body = c.body;
  req.headers = c.headers;
  req.headers.emplace_back("X-Auth-Token", a.token);
  std::string query = encode_query(c.query);
  req.url = a.storage_url + object_call_path(c) + (query.empty() ? "" : "?" + query);
  return req;
}

HttpResponse SwiftClient::call(const ObjectCall& c, const std::string& what, long allowed) {
  return http_.call([&] { return authorized(c); }, what, {allowed});
}

void SwiftClient::put_container(const std::string& container) {
  call(ObjectCall{.method = "PUT", .container = container}, "creating container " + container);
}

std::string SwiftClient::put_object(const std::string& container, const std::string& name, std::string_view body,
                                    bool create_only, bool manifest) {
  ObjectCall c{.method = "PUT", .container = container, .object = name};
  c.headers = {{"Content-Type", manifest ? "application/json" : "application/octet-stream"}};
  if (create_only) c.headers.emplace_back("If-None-Match", "*");
  if (manifest) c.query = {{"multipart-manifest", "put"}};
  c.body = body;
  HttpResponse r = call(c, (manifest ? "commit of " : "upload of ") + describe(container, name));
  std::string etag = r.header("etag");
  if (etag.size() >= 2 && etag.front() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

std::optional<SwiftObjectInfo> SwiftClient::head_object(const std::string& container, const std::string& name) {
  HttpResponse r = call(ObjectCall{.method = "HEAD", .container = container, .object = name},
                        "metadata of " + describe(container, name), 404);
  if (r.status == 404) return std::nullopt;
  HttpObjectHead head = object_head(r, "metadata of " + describe(container, name));
  return SwiftObjectInfo{name, head.size, head.modified_unix_micros, head.etag};
}

void SwiftClient::get_object(const std::string& container, const std::string& name, uint64_t offset,
                             const std::string& etag, const HttpBodySink& sink) {
  ObjectCall c{.method = "GET", .container = container, .object = name};
  add_read_headers(c.headers, offset, etag);
  http_.read([&] { return authorized(c); }, "download of " + describe(container, name), sink);
}

std::optional<std::vector<std::string>> SwiftClient::slo_segments(const std::string& container,
                                                                  const std::string& name) {
  ObjectCall c{.method = "GET", .container = container, .object = name, .query = {{"multipart-manifest", "get"}}};
  std::string what = "manifest of " + describe(container, name);
  HttpResponse r = call(c, what, 404);
  if (r.status == 404 || r.header("x-static-large-object") != "True") return std::nullopt;
  return parse_swift_slo_manifest(r.body, what);
}

std::vector<SwiftObjectInfo> SwiftClient::list(const std::string& container, const std::string& prefix,
                                               const std::string& marker, const std::string& end_marker) {
  ObjectCall c{.method = "GET", .container = container, .query = {{"format", "json"}, {"limit", "10000"}}};
  if (!prefix.empty()) c.query.emplace_back("prefix", prefix);
  if (!marker.empty()) c.query.emplace_back("marker", marker);
  if (!end_marker.empty()) c.query.emplace_back("end_marker", end_marker);
  std::string what = "listing " + describe(container, prefix);
  HttpResponse r = call(c, what);
  return parse_swift_listing(r.body, what);
}

void SwiftClient::delete_object(const std::string& container, const std::string& name) {
  std::string what = "delete of " + describe(container, name);
  // Deleting a static large object this way deletes its segments too. Swift answers 200 whatever
  // happened, with a report; it refuses a plain object ("Not an SLO manifest"), which then gets a
  // plain delete (one request more only for small objects).
  HttpResponse r = call(ObjectCall{.method = "DELETE",
                                   .container = container,
                                   .object = name,
                                   .query = {{"multipart-manifest", "delete"}},
                                   .headers = {{"Accept", "application/json"}}},
                        what, 404);
  if (r.status == 404) return;
  SwiftBulkDelete report = parse_swift_bulk_delete(r.body, what);
  if (report.status >= 200 && report.status < 300) return;
  if (!report.not_a_manifest) {
    throw Error(report.status == 401 || report.status == 403 ? ErrorKind::kAuth : ErrorKind::kInvalidArgument,
                what + ": " + std::to_string(report.status) + " " + report.errors);
  }
  call(ObjectCall{.method = "DELETE", .container = container, .object = name}, what, 404);
}

}  // namespace etcdadm

// The OpenStack Swift object API calls the Swift store needs, on libcurl: PUT, HEAD, ranged GET,
// DELETE of objects, container listings, PUT container, and static large objects (a manifest
// PUT with ?multipart-manifest=put; DELETE and GET with ?multipart-manifest=delete / get).
// Requests go through the object stores' HTTP layer (store/backend/object/object_http.h): pooled
// connections, retries (5xx, 429, timeouts, broken connections), and a 401 drops the token
// (store/backend/swift/swift_auth.h) and tries once more. Thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http_client.h"
#include "common/retry.h"
#include "store/backend/object/object_http.h"
#include "store/backend/swift/swift_auth.h"
#include "store/backend/swift/swift_responses.h"

namespace etcdadm {

class SwiftClient {
 public:
  SwiftClient(std::shared_ptr<SwiftSession> session, RetryPolicy retry = {});
  SwiftSession& session() { return *session_; }
  const RetryPolicy& retry() const { return http_.retry(); }

  // PUT container (idempotent: an existing one is fine).
  void put_container(const std::string& container);
  // PUT object; returns its ETag. `create_only`: If-None-Match: *, so an existing object is never
  // replaced (412 -> kAlreadyExists). `manifest`: the body is a static large object's manifest.
  std::string put_object(const std::string& container, const std::string& name, std::string_view body, bool create_only,
                         bool manifest = false);
  std::optional<SwiftObjectInfo> head_object(const std::string& container, const std::string& name);
  // Streams from `offset` to the end; `etag` pins the version (a changed object: 412 -> kCorrupt).
  // Not retried here (StreamingReader resumes).
  void get_object(const std::string& container, const std::string& name, uint64_t offset, const std::string& etag,
                  const HttpBodySink& sink);
  // The segment paths of a static large object ("/container/object" each); nullopt when `name`
  // is a plain object or missing.
  std::optional<std::vector<std::string>> slo_segments(const std::string& container, const std::string& name);
  // One page (up to 10,000 objects) after `marker`.
  // Names after `marker` and, with `end_marker`, before it.
  std::vector<SwiftObjectInfo> list(const std::string& container, const std::string& prefix, const std::string& marker,
                                    const std::string& end_marker = "");
  // Deletes the object, and the segments of a static large object; missing is fine.
  void delete_object(const std::string& container, const std::string& name);

 private:
  // The request of one attempt, carrying the session's token to its storage URL.
  HttpRequest authorized(const ObjectCall& call) const;
  // The call under the retry policy; a non-2xx answer other than `allowed` is thrown.
  HttpResponse call(const ObjectCall& call, const std::string& what, long allowed = 0);
  std::string describe(const std::string& container, const std::string& name) const;

  std::shared_ptr<SwiftSession> session_;
  ObjectHttp http_;
};

// Classifies a Swift error answer (exposed for tests).
Error swift_error(const HttpResponse& response, const std::string& what, const std::string& auth_description);

}  // namespace etcdadm

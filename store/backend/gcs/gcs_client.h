// The GCS JSON API calls the GCS store needs, on libcurl: object metadata, single-request
// ("media") uploads, resumable uploads in chunks, ranged downloads, listing, delete.
//
// Requests go through the object stores' HTTP layer (store/backend/object/object_http.h): pooled
// connections, retries (5xx, 429, 408, timeouts, broken connections), and a 401 drops the cached
// token and tries once more with a fresh one. Resumable uploads recover from a
// broken chunk by asking the server how much it persisted (PUT with "Content-Range: bytes */*")
// and resending from there. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/http_client.h"
#include "common/retry.h"
#include "store/backend/gcs/gcs_auth.h"
#include "store/backend/gcs/gcs_responses.h"
#include "store/backend/object/object_http.h"

namespace etcdadm {

struct GcsConfig {
  std::string endpoint = "https://storage.googleapis.com";
  HttpOptions http;
  RetryPolicy retry;
};

class GcsClient {
 public:
  GcsClient(GcsConfig config, std::shared_ptr<GcsAuth> auth);
  const GcsConfig& config() const { return config_; }
  // Swaps in new credentials (thread-safe; requests in flight finish with the old ones).
  void set_auth(std::shared_ptr<GcsAuth> auth);

  std::optional<GcsObjectInfo> get_metadata(const std::string& bucket, const std::string& name);
  // A small object's bytes in one request (no metadata request first), retried whole; nullopt
  // when it does not exist, kCorrupt past `limit` bytes.
  // `generation`, when given, receives the object's generation (x-goog-generation).
  std::optional<std::string> get_small_object(const std::string& bucket, const std::string& name, size_t limit,
                                              std::string* generation = nullptr);
  // One request. With if_absent, the server refuses to replace an existing object (412 ->
  // kAlreadyExists).
  GcsObjectInfo upload_media(const std::string& bucket, const std::string& name, std::string_view body, bool if_absent);
  // One request that takes effect only if the object's generation is `expected_generation` ("":
  // only if there is none, ifGenerationMatch=0). Returns the new generation; nullopt on 412.
  std::optional<std::string> upload_media_if(const std::string& bucket, const std::string& name, std::string_view body,
                                             const std::string& expected_generation);

  // Starts a resumable upload session; returns its URI.
  std::string start_resumable(const std::string& bucket, const std::string& name, bool if_absent);
  // Sends bytes [offset, offset + data.size()) of the session. `total` is set on the last chunk
  // (the object's final size); other chunks must be multiples of 256 KiB. Recovers from broken
  // transfers by querying the session and resending what the server lacks. Returns true when the
  // server reports the object complete.
  bool upload_chunk(const std::string& session, uint64_t offset, std::string_view data, std::optional<uint64_t> total);
  // Cancels a session (best effort: an abandoned session expires by itself and leaves no object).
  void cancel_resumable(const std::string& session);

  // Streams the object from `offset` to its end; `generation` pins the version. Not retried here
  // (StreamingReader resumes).
  void download(const std::string& bucket, const std::string& name, const std::string& generation, uint64_t offset,
                const HttpBodySink& sink);
  // `versions`: noncurrent generations too (versioned buckets), each marked noncurrent.
  // `start_offset` (inclusive) and `end_offset` (exclusive) bound the names listed; "" for none.
  GcsListPage list(const std::string& bucket, const std::string& prefix, const std::string& page_token,
                   int max_results = 1000, bool versions = false, const std::string& start_offset = "",
                   const std::string& end_offset = "");
  void remove(const std::string& bucket, const std::string& name);  // missing is fine
  // Deletes one generation for good (a noncurrent one in a versioned bucket); missing is fine.
  // Throws kAuth when a retention policy or hold keeps it (403).
  void remove_generation(const std::string& bucket, const std::string& name, const std::string& generation);

 private:
  // The request with the current token.
  HttpRequest authorized(HttpRequest request) const;
  // One attempt (ObjectHttp::send).
  HttpResponse send(const HttpRequest& request, const HttpBodySink& sink = nullptr);
  // Under the retry policy; a non-2xx answer other than `allowed` is thrown.
  HttpResponse call(const HttpRequest& request, const std::string& what, long allowed = 0);
  std::string object_url(const std::string& bucket, const std::string& name) const;
  // Asks a session how many bytes it holds; nullopt when the upload is already complete.
  std::optional<uint64_t> query_session(const std::string& session);

  std::shared_ptr<GcsAuth> auth() const;

  GcsConfig config_;
  mutable std::mutex auth_mu_;
  std::shared_ptr<GcsAuth> auth_;
  ObjectHttp http_;
};

// Classifies a GCS error response (exposed for tests).
Error gcs_error(const HttpResponse& response, const std::string& what);

// The resumable-upload chunk granularity required by GCS.
inline constexpr size_t kGcsChunkQuantum = 256 * 1024;

}  // namespace etcdadm

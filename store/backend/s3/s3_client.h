// The S3 REST calls the S3 store needs, on libcurl + SigV4: objects (PUT, HEAD, ranged GET,
// DELETE), ListObjectsV2, DeleteObjects, and multipart uploads. Works with AWS and S3-compatible
// servers (MinIO, Ceph RGW, Swift s3api, Wasabi ...): custom endpoint, path-style addressing.
//
// Every call is retried (see common/retry.h) on 5xx, 429/SlowDown, timeouts and broken
// connections. A request sent to the wrong region is re-sent once to the bucket's region, taken
// from the x-amz-bucket-region header (or the <Region> of AuthorizationHeaderMalformed), and the
// client remembers it. Thread-safe: parallel part uploads share one client; requests go over the
// object stores' pooled connections (store/backend/object/object_http.h).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http_client.h"
#include "common/retry.h"
#include "store/backend/object/object_http.h"
#include "store/backend/s3/aws_credentials.h"
#include "store/backend/s3/aws_responses.h"

namespace etcdadm {

struct S3Config {
  std::string endpoint;  // "" = AWS (https://s3.<region>.amazonaws.com); else scheme://host[:port]
  std::string region = "us-east-1";
  bool path_style = false;  // virtual-hosted (bucket.host) when false
  HttpOptions http;
  bool unsigned_payload = false;  // send UNSIGNED-PAYLOAD instead of hashing bodies
  std::string sse;                // "", "AES256" or "aws:kms"
  std::string sse_kms_key_id;     // with sse == "aws:kms"; "" = the account's default key
  // Object Lock retention on every object written (--object-lock-days): "COMPLIANCE" or
  // "GOVERNANCE", until `object_lock_days` after the upload starts. The bucket must have Object
  // Lock enabled. Uploads then carry Content-MD5, which S3 requires with lock parameters.
  std::string object_lock_mode;
  int object_lock_days = 0;
  RetryPolicy retry;
};

class S3Client {
 public:
  S3Client(S3Config config, std::shared_ptr<AwsCredentialProvider> credentials);

  const S3Config& config() const { return config_; }
  void reload_credentials() { credentials_->invalidate(); }
  std::string region() const;

  // Creates a bucket in the client's region (tests and first-time setup; backups never do this).
  void create_bucket(const std::string& bucket);
  // Single-request upload (small objects). Returns the ETag. With `create_only`, the server refuses
  // to replace an existing object (If-None-Match: *; 412 -> Error kAlreadyExists) where it supports
  // conditional writes (AWS since 2024, MinIO); see conditional_writes().
  std::string put_object(const std::string& bucket, const std::string& key, std::string_view body,
                         bool create_only = false);
  // Also fills the object's Object Lock state (lock_mode, retain_until, legal_hold) from the headers.
  std::optional<S3ObjectInfo> head_object(const std::string& bucket, const std::string& key);
  // Streams the object from `offset` to its end into `sink`. With `etag`, the server refuses
  // (412 -> Error kCorrupt) if the object changed meanwhile, so a resumed read never mixes two
  // versions. Not retried here: the reader resumes from the offset it reached.
  void get_object(const std::string& bucket, const std::string& key, uint64_t offset, const std::string& etag,
                  const HttpBodySink& sink);
  // `start_after`: only keys after it (S3's start-after; ignored by S3 once a continuation token is given).
  S3ListPage list_objects(const std::string& bucket, const std::string& prefix, const std::string& continuation_token,
                          int max_keys = 1000, const std::string& start_after = "");
  // The whole object in one GET (metadata files); nullopt when it does not exist. `etag`, when
  // given, receives the object's ETag.
  std::optional<std::string> get_small_object(const std::string& bucket, const std::string& key,
                                              std::string* etag = nullptr);
  // A single-request upload that takes effect only if the object's ETag is `expected_etag` (If-Match)
  // or, for "", only if there is no object (If-None-Match: *). Returns the new ETag; nullopt when
  // the server refused (412, or AWS's 409 ConditionalRequestConflict for a write racing another).
  // A server that does not implement the condition (501) is kInvalidArgument: never a fallback.
  std::optional<std::string> put_object_if(const std::string& bucket, const std::string& key, std::string_view body,
                                           const std::string& expected_etag);
  void delete_object(const std::string& bucket, const std::string& key);
  // At most 1000 keys per call (S3's limit). Throws when any key could not be deleted.
  void delete_objects(const std::string& bucket, const std::vector<std::string>& keys);

  // Versioned buckets. bucket_versioning: "Enabled", "Suspended" or "" (never enabled).
  std::string bucket_versioning(const std::string& bucket);
  // One page of ListObjectVersions under `prefix`, from the markers of the previous page.
  S3VersionsPage list_object_versions(const std::string& bucket, const std::string& prefix,
                                      const std::string& key_marker, const std::string& version_id_marker,
                                      int max_keys = 1000);
  // DeleteObjects of exact versions (at most 1000): deletes them for good, delete markers too.
  // Returns the versions S3 refused (e.g. under Object Lock) instead of throwing.
  std::vector<S3DeleteFailure> delete_object_versions(const std::string& bucket,
                                                      const std::vector<S3ObjectVersion>& versions);

  std::string create_multipart_upload(const std::string& bucket, const std::string& key);
  std::string upload_part(const std::string& bucket, const std::string& key, const std::string& upload_id,
                          int part_number, std::string_view data);
  // `create_only`: as for put_object, checked when the upload completes.
  void complete_multipart_upload(const std::string& bucket, const std::string& key, const std::string& upload_id,
                                 const std::vector<std::string>& part_etags, bool create_only = false);
  void abort_multipart_upload(const std::string& bucket, const std::string& key, const std::string& upload_id);
  std::vector<S3Upload> list_multipart_uploads(const std::string& bucket, const std::string& prefix);

  // Whether the server enforces If-None-Match: * on writes. Unknown until the first create_only
  // write; a server that answers it with 501 (Swift's s3api) is remembered as not supporting it,
  // and its writes are sent again without the header: there "no overwrite" rests on the check
  // before the upload alone.
  enum class ConditionalWrites { kUnknown, kSupported, kUnsupported };
  ConditionalWrites conditional_writes() const { return conditional_writes_.load(); }

 private:
  struct Call {
    std::string method = "GET";
    std::string bucket = {};
    std::string key = {};
    std::vector<std::pair<std::string, std::string>> query = {};
    std::vector<std::pair<std::string, std::string>> headers = {};
    std::string_view body = {};
    bool allow_404 = false;
    bool create_only = false;   // If-None-Match: * unless the server is known not to support it
    std::string if_match = {};  // If-Match: "<etag>"
    // The condition must be enforced: a 501 is an error, not a reason to send the request again
    // without it.
    bool strict = false;
  };
  // Server-side encryption and Object Lock headers of a request that creates an object (PUT,
  // CreateMultipartUpload).
  void add_new_object_headers(Call& c) const;
  // call() for a request that creates an object: an Object Lock refusal gets its remedy as hint.
  HttpResponse call_creating(const Call& c, const std::string& what);
  // DeleteObjects of (key, version ID or "") pairs; returns what S3 did not delete.
  std::vector<S3DeleteFailure> delete_batch(const std::string& bucket,
                                            const std::vector<std::pair<std::string, std::string>>& objects);
  // One attempt: sign, send, follow a region redirect once; a non-2xx answer (other than an
  // allowed 404) is thrown as a classified Error.
  HttpResponse send(const Call& call, const HttpBodySink& sink = nullptr);
  // send() under the retry policy.
  HttpResponse call(const Call& call, const std::string& what);

  S3Config config_;
  std::shared_ptr<AwsCredentialProvider> credentials_;
  mutable std::mutex mu_;
  std::string region_;  // may change after a redirect
  ObjectHttp http_;
  std::atomic<ConditionalWrites> conditional_writes_{ConditionalWrites::kUnknown};
};

// Classifies an S3 error response into an Error (exposed for tests). `what` names the operation.
Error s3_error(const HttpResponse& response, const std::string& what, const std::string& access_key_id);

}  // namespace etcdadm

#include "store/backend/s3/s3_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "common/base64.h"
#include "common/error.h"
#include "common/timefmt.h"
#include "store/backend/object/xml_reader.h"
#include "store/backend/s3/aws_responses.h"

namespace etcdadm {

namespace {

int64_t http_date_micros(const std::string& s) {
  if (s.empty()) return 0;
  time_t t = curl_getdate(s.c_str(), nullptr);
  return t < 0 ? 0 : static_cast<int64_t>(t) * 1000000;
}

std::string base64_md5(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_md5(), nullptr);
  return base64(std::string_view(reinterpret_cast<const char*>(md), len));
}

bool bucket_is_dns_safe(const std::string& bucket) { return bucket.find('.') == std::string::npos; }

}  // namespace

Error s3_error(const HttpResponse& response, const std::string& what, const std::string& access_key_id) {
  S3ErrorBody body = parse_s3_error_body(response.body);
  const std::string& code = body.code;
  const std::string& message = body.message;
  long st = response.status;
  std::string text = what + ": HTTP " + std::to_string(st) + (code.empty() ? "" : " " + code) +
                     (message.empty() ? "" : ": " + message);
  if (st == 501 || code == "NotImplemented") {
    return Error(ErrorKind::kInvalidArgument, text,
                 "this S3-compatible server does not implement the request (e.g. Swift has no server-side "
                 "encryption): drop the option that needs it");
  }
  if (st >= 500 || st == 429 || code == "SlowDown" || code == "RequestTimeout" || code == "InternalError") {
    return Error(ErrorKind::kUnavailable, text, "the server is overloaded or failing; retried with backoff");
  }
  if (code == "SignatureDoesNotMatch") {
    return Error(ErrorKind::kAuth, what + ": signature does not match (access key " + access_key_id + ")",
                 "check your credentials: the secret key does not belong to "
                 "this access key, or the clock is off");
  }
  if (code == "InvalidAccessKeyId") {
    return Error(ErrorKind::kAuth, what + ": the access key " + access_key_id + " is not known to the server",
                 "check your credentials (AWS_ACCESS_KEY_ID / profile) and the "
                 "endpoint");
  }
  if (code == "ExpiredToken" || code == "InvalidToken" || code == "TokenRefreshRequired") {
    return Error(ErrorKind::kAuth, text, "the session token expired or is invalid; check the credential source");
  }
  if (code == "RequestTimeTooSkewed") {
    return Error(ErrorKind::kAuth, text, "this host's clock is off by more than 15 minutes; fix NTP");
  }
  if (st == 403) {
    return Error(ErrorKind::kAuth, text.find("AccessDenied") != std::string::npos ? text : text + " (access denied)",
                 "the credentials lack permission for this bucket/prefix; "
                 "docs/operations.md lists the IAM policy");
  }
  if (code == "NoSuchBucket") {
    return Error(ErrorKind::kNotFound, text, "create the bucket first, or check its name and region");
  }
  if (st == 404) return Error(ErrorKind::kNotFound, text);
  if (st == 412) return Error(ErrorKind::kCorrupt, what + ": the object changed while it was being read (HTTP 412)");
  return Error(ErrorKind::kInvalidArgument, text,
               code.empty() ? "the server gave no details (HEAD answers carry none): check the bucket name (3-63 "
                              "characters), the region and the endpoint"
                            : "");
}

S3Client::S3Client(S3Config config, std::shared_ptr<AwsCredentialProvider> credentials)
    : config_(std::move(config)),
      credentials_(std::move(credentials)),
      region_(config_.region),
      // send() signs, follows region redirects and classifies answers itself: the layer pools
      // the connections and runs the retries.
      http_(config_.http, config_.retry, ObjectHttp::Protocol{}) {
  while (!config_.endpoint.empty() && config_.endpoint.back() == '/') config_.endpoint.pop_back();
  if (!config_.endpoint.empty()) split_url(config_.endpoint);  // validates
}

std::string S3Client::region() const {
  std::lock_guard<std::mutex> lock(mu_);
  return region_;
}

HttpResponse S3Client::send(const Call& c, const HttpBodySink& sink) {
  for (int redirects = 0;; ++redirects) {
    std::string region = this->region();
    // Address: https://bucket.s3.region.amazonaws.com/key or
    // endpoint/bucket/key.
    std::string scheme = "https", authority, path;
    bool path_style = config_.path_style || !bucket_is_dns_safe(c.bucket);
    if (config_.endpoint.empty()) {
      std::string suffix = region.rfind("cn-", 0) == 0 ? "amazonaws.com.cn" : "amazonaws.com";
      authority = "s3." + region + "." + suffix;
    } else {
      UrlParts u = split_url(config_.endpoint);
      scheme = u.scheme;
      authority = u.authority;
    }
    if (c.bucket.empty()) {
      path = "/";
    } else if (path_style) {
      path = "/" + c.bucket + "/" + c.key;
    } else {
      authority = c.bucket + "." + authority;
      path = "/" + c.key;
    }
    std::string canonical_uri = percent_encode(path, /*keep_slash=*/true);
    std::string query = sigv4_canonical_query(c.query);

    AwsCredentials creds = credentials_->get();
    SigV4Request sr;
    sr.method = c.method;
    sr.host = authority;
    sr.canonical_uri = canonical_uri;
    sr.query = c.query;
    sr.headers = c.headers;
    const bool conditional =
        c.create_only && (c.strict || conditional_writes_.load() != ConditionalWrites::kUnsupported);
    if (conditional) sr.headers.emplace_back("If-None-Match", "*");
    if (!c.if_match.empty()) sr.headers.emplace_back("If-Match", "\"" + c.if_match + "\"");
    sr.payload_sha256 =
        c.body.empty() ? kEmptyPayloadSha256 : (config_.unsigned_payload ? kUnsignedPayload : sha256_hex(c.body));
    sr.headers.emplace_back("x-amz-content-sha256", sr.payload_sha256);
    if (!creds.session_token.empty()) sr.headers.emplace_back("x-amz-security-token", creds.session_token);
    SigV4Result signed_req = sigv4_sign(sr, creds, region, "s3", std::chrono::system_clock::now());

    HttpRequest req;
    req.method = c.method;
    req.url = scheme + "://" + authority + canonical_uri + (query.empty() ? "" : "?" + query);
    req.headers = sr.headers;
    req.headers.emplace_back("x-amz-date", signed_req.amz_date);
    req.headers.emplace_back("Authorization", signed_req.authorization);
    req.body = c.body;

    HttpResponse resp = http_.perform(req, sink);
    if (conditional && resp.ok()) conditional_writes_.store(ConditionalWrites::kSupported);
    if (resp.ok() || (c.allow_404 && resp.status == 404)) return resp;

    if (c.strict && (resp.status == 501 || resp.body.find("<Code>NotImplemented</Code>") != std::string::npos)) {
      throw Error(ErrorKind::kInvalidArgument,
                  (config_.endpoint.empty() ? std::string("S3") : config_.endpoint) +
                      " does not implement conditional writes (If-None-Match / If-Match answered HTTP " +
                      std::to_string(resp.status) + ")",
                  "use AWS S3, MinIO RELEASE.2024-05-07 or later, GCS, Azure Blob or a local/shared filesystem");
    }
    if (!c.if_match.empty() && (resp.status == 412 || resp.status == 404)) {
      // 404: the object is gone (AWS answers NoSuchKey to If-Match on a missing key).
      throw Error(ErrorKind::kAlreadyExists, "s3://" + c.bucket + "/" + c.key +
                                                 " changed since it was read: the server refused to replace it (HTTP " +
                                                 std::to_string(resp.status) + ")");
    }
    if (conditional || !c.if_match.empty()) {
      if (resp.status == 412) {
        throw Error(ErrorKind::kAlreadyExists,
                    "s3://" + c.bucket + "/" + c.key + " already exists: the server refused to replace it (HTTP 412)");
      }
      // AWS: another conditional write of the same key is in flight; one of the two will win.
      if (resp.status == 409 && resp.body.find("ConditionalRequestConflict") != std::string::npos) {
        throw Error(ErrorKind::kAlreadyExists,
                    "s3://" + c.bucket + "/" + c.key + " is being written by another upload (HTTP 409)");
      }
      if (resp.status == 501 || resp.body.find("<Code>NotImplemented</Code>") != std::string::npos) {
        spdlog::debug(
            "{} does not support conditional writes (If-None-Match: *): relying on the check before the upload",
            config_.endpoint.empty() ? "S3" : config_.endpoint);
        conditional_writes_.store(ConditionalWrites::kUnsupported);
        --redirects;  // not a redirect: the same request without the header
        continue;
      }
    }

    // Wrong region: S3 names the right one in a header (or, for 400, in the
    // error body).
    std::string right = resp.header("x-amz-bucket-region");
    if (right.empty() && resp.status == 400 && resp.body.find("AuthorizationHeaderMalformed") != std::string::npos) {
      right = parse_s3_error_body(resp.body).region;
    }
    // The region becomes part of the host name of every later request: only a region name counts.
    if (!is_valid_region_name(right)) right.clear();
    if (!right.empty() && right != region && redirects == 0 &&
        (resp.status == 301 || resp.status == 307 || resp.status == 400)) {
      spdlog::info("bucket {} is in region {}, not {}: switching", c.bucket, right, region);
      std::lock_guard<std::mutex> lock(mu_);
      region_ = right;
      continue;
    }
    if (resp.status == 301 || resp.status == 307) {
      throw Error(ErrorKind::kInvalidArgument,
                  "S3 " + c.method + " s3://" + c.bucket + "/" + c.key + ": HTTP " + std::to_string(resp.status) +
                      " redirect" + (right.empty() ? "" : " to region " + right),
                  "set the bucket's region (--s3-region / AWS_REGION) or the "
                  "right endpoint");
    }
    throw s3_error(resp, "S3 " + c.method + " s3://" + c.bucket + "/" + c.key, creds.access_key_id);
  }
}

HttpResponse S3Client::call(const Call& c, const std::string& what) {
  HttpResponse out;
  http_.with_retries(what, [&] { out = send(c); });
  return out;
}

void S3Client::create_bucket(const std::string& bucket) {
  std::string body;
  std::string region = this->region();
  if (region != "us-east-1") {
    body = "<CreateBucketConfiguration><LocationConstraint>" + region +
           "</LocationConstraint></CreateBucketConfiguration>";
  }
  Call c{.method = "PUT", .bucket = bucket, .key = "", .body = body};
  call(c, "creating bucket " + bucket);
}

void S3Client::add_new_object_headers(Call& c) const {
  if (!config_.sse.empty()) {
    c.headers.emplace_back("x-amz-server-side-encryption", config_.sse);
    if (config_.sse == "aws:kms" && !config_.sse_kms_key_id.empty()) {
      c.headers.emplace_back("x-amz-server-side-encryption-aws-kms-key-id", config_.sse_kms_key_id);
    }
  }
  if (config_.object_lock_days > 0) {
    const auto until = std::chrono::system_clock::now() + std::chrono::hours(24) * config_.object_lock_days;
    c.headers.emplace_back("x-amz-object-lock-mode", config_.object_lock_mode);
    c.headers.emplace_back("x-amz-object-lock-retain-until-date", format_rfc3339_seconds(until));
  }
}

HttpResponse S3Client::call_creating(const Call& c, const std::string& what) {
  try {
    return call(c, what);
  } catch (const Error& e) {
    const std::string message = e.what();
    if (config_.object_lock_days == 0 ||
        (message.find("ObjectLock") == std::string::npos && message.find("Object Lock") == std::string::npos)) {
      throw;
    }
    throw Error(e.kind(), message,
                "--object-lock-days needs a bucket with Object Lock enabled, which S3 allows only when the bucket is "
                "created (aws s3api create-bucket --object-lock-enabled-for-bucket); or save without it");
  }
}

std::string S3Client::put_object(const std::string& bucket, const std::string& key, std::string_view body,
                                 bool create_only) {
  Call c{.method = "PUT", .bucket = bucket, .key = key, .body = body, .create_only = create_only};
  add_new_object_headers(c);
  if (config_.object_lock_days > 0) c.headers.emplace_back("Content-MD5", base64_md5(body));
  HttpResponse r = call_creating(c, "upload of s3://" + bucket + "/" + key);
  return unquote_etag(r.header("etag"));
}

std::optional<S3ObjectInfo> S3Client::head_object(const std::string& bucket, const std::string& key) {
  Call c{.method = "HEAD", .bucket = bucket, .key = key};
  c.allow_404 = true;
  HttpResponse r = call(c, "HEAD s3://" + bucket + "/" + key);
  if (r.status == 404) return std::nullopt;
  S3ObjectInfo info;
  info.key = key;
  info.size = std::stoull(r.header("content-length").empty() ? "0" : r.header("content-length"));
  info.modified_unix_micros = http_date_micros(r.header("last-modified"));
  info.etag = unquote_etag(r.header("etag"));
  info.lock_mode = r.header("x-amz-object-lock-mode");
  if (auto until = parse_rfc3339(r.header("x-amz-object-lock-retain-until-date")))
    info.retain_until_micros = to_unix_micros(*until);
  info.legal_hold = r.header("x-amz-object-lock-legal-hold") == "ON";
  return info;
}

void S3Client::get_object(const std::string& bucket, const std::string& key, uint64_t offset, const std::string& etag,
                          const HttpBodySink& sink) {
  Call c{.method = "GET", .bucket = bucket, .key = key};
  if (offset > 0) c.headers.emplace_back("Range", "bytes=" + std::to_string(offset) + "-");
  if (!etag.empty()) c.headers.emplace_back("If-Match", "\"" + etag + "\"");
  send(c, sink);  // HttpClient refuses a resumed read answered with the whole object
}

S3ListPage S3Client::list_objects(const std::string& bucket, const std::string& prefix, const std::string& token,
                                  int max_keys, const std::string& start_after) {
  Call c{.method = "GET", .bucket = bucket, .key = ""};
  c.query = {{"list-type", "2"}, {"max-keys", std::to_string(max_keys)}};
  if (!prefix.empty()) c.query.emplace_back("prefix", prefix);
  if (!token.empty())
    c.query.emplace_back("continuation-token", token);
  else if (!start_after.empty())
    c.query.emplace_back("start-after", start_after);
  HttpResponse r = call(c, "listing s3://" + bucket + "/" + prefix);
  return parse_list_objects_v2(r.body, "ListObjectsV2 response of s3://" + bucket + "/" + prefix);
}

std::optional<std::string> S3Client::get_small_object(const std::string& bucket, const std::string& key,
                                                      std::string* etag) {
  Call c{.method = "GET", .bucket = bucket, .key = key};
  c.allow_404 = true;
  HttpResponse r = call(c, "read of s3://" + bucket + "/" + key);
  if (r.status == 404) return std::nullopt;
  if (etag != nullptr) *etag = unquote_etag(r.header("etag"));
  return std::move(r.body);
}

std::optional<std::string> S3Client::put_object_if(const std::string& bucket, const std::string& key,
                                                   std::string_view body, const std::string& expected_etag) {
  Call c{.method = "PUT",
         .bucket = bucket,
         .key = key,
         .body = body,
         .create_only = expected_etag.empty(),
         .if_match = expected_etag,
         .strict = true};
  add_new_object_headers(c);
  if (config_.object_lock_days > 0) c.headers.emplace_back("Content-MD5", base64_md5(body));
  try {
    HttpResponse r = call_creating(c, "conditional upload of s3://" + bucket + "/" + key);
    std::string etag = unquote_etag(r.header("etag"));
    if (etag.empty()) {
      throw Error(ErrorKind::kCorrupt,
                  "s3://" + bucket + "/" + key + ": the server answered a conditional upload without an ETag");
    }
    return etag;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kAlreadyExists) return std::nullopt;
    throw;
  }
}

void S3Client::delete_object(const std::string& bucket, const std::string& key) {
  Call c{.method = "DELETE", .bucket = bucket, .key = key};
  c.allow_404 = true;
  call(c, "delete of s3://" + bucket + "/" + key);
}

std::vector<S3DeleteFailure> S3Client::delete_batch(const std::string& bucket,
                                                    const std::vector<std::pair<std::string, std::string>>& objects) {
  if (objects.empty()) return {};
  if (objects.size() > 1000) throw Error(ErrorKind::kInternal, "DeleteObjects: more than 1000 keys in one call");
  std::string body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Delete><Quiet>true</Quiet>";
  for (const auto& [key, version] : objects) {
    body += "<Object><Key>" + xml_escape(key) + "</Key>";
    if (!version.empty()) body += "<VersionId>" + xml_escape(version) + "</VersionId>";
    body += "</Object>";
  }
  body += "</Delete>";
  Call c{.method = "POST",
         .bucket = bucket,
         .key = "",
         .query = {{"delete", ""}},
         .headers = {{"Content-MD5", base64_md5(body)}, {"Content-Type", "application/xml"}},
         .body = body};
  HttpResponse r = call(c, "batch delete in s3://" + bucket);
  return parse_delete_objects_result(r.body, "DeleteObjects response");
}

void S3Client::delete_objects(const std::string& bucket, const std::vector<std::string>& keys) {
  std::vector<std::pair<std::string, std::string>> objects;
  for (const auto& k : keys) objects.emplace_back(k, "");
  auto errors = delete_batch(bucket, objects);
  if (!errors.empty()) {
    throw Error(ErrorKind::kAuth,
                "S3 did not delete " + std::to_string(errors.size()) + " of " + std::to_string(keys.size()) +
                    " objects, e.g. " + errors[0].key + ": " + errors[0].code + " " + errors[0].message,
                "check s3:DeleteObject permission on the prefix");
  }
}

std::string S3Client::bucket_versioning(const std::string& bucket) {
  Call c{.method = "GET", .bucket = bucket, .key = "", .query = {{"versioning", ""}}};
  HttpResponse r = call(c, "reading the versioning of s3://" + bucket);
  return parse_bucket_versioning(r.body, "GetBucketVersioning response of s3://" + bucket);
}

S3VersionsPage S3Client::list_object_versions(const std::string& bucket, const std::string& prefix,
                                              const std::string& key_marker, const std::string& version_id_marker,
                                              int max_keys) {
  Call c{.method = "GET", .bucket = bucket, .key = ""};
  c.query = {{"versions", ""}, {"max-keys", std::to_string(max_keys)}};
  if (!prefix.empty()) c.query.emplace_back("prefix", prefix);
  if (!key_marker.empty()) c.query.emplace_back("key-marker", key_marker);
  if (!version_id_marker.empty()) c.query.emplace_back("version-id-marker", version_id_marker);
  HttpResponse r = call(c, "listing the versions in s3://" + bucket + "/" + prefix);
  return parse_list_object_versions(r.body, "ListObjectVersions response of s3://" + bucket + "/" + prefix);
}

std::vector<S3DeleteFailure> S3Client::delete_object_versions(const std::string& bucket,
                                                              const std::vector<S3ObjectVersion>& versions) {
  std::vector<std::pair<std::string, std::string>> objects;
  for (const auto& v : versions) objects.emplace_back(v.key, v.version_id);
  return delete_batch(bucket, objects);
}

std::string S3Client::create_multipart_upload(const std::string& bucket, const std::string& key) {
  Call c{.method = "POST", .bucket = bucket, .key = key, .query = {{"uploads", ""}}};
  add_new_object_headers(c);
  HttpResponse r = call_creating(c, "starting multipart upload of s3://" + bucket + "/" + key);
  return parse_upload_id(r.body, "CreateMultipartUpload response for s3://" + bucket + "/" + key);
}

std::string S3Client::upload_part(const std::string& bucket, const std::string& key, const std::string& upload_id,
                                  int part_number, std::string_view data) {
  Call c{.method = "PUT",
         .bucket = bucket,
         .key = key,
         .query = {{"partNumber", std::to_string(part_number)}, {"uploadId", upload_id}},
         .body = data};
  if (config_.object_lock_days > 0) c.headers.emplace_back("Content-MD5", base64_md5(data));
  HttpResponse r = call(c, "upload of part " + std::to_string(part_number) + " of s3://" + bucket + "/" + key);
  std::string etag = unquote_etag(r.header("etag"));
  if (etag.empty()) throw Error(ErrorKind::kCorrupt, "S3 returned no ETag for part " + std::to_string(part_number));
  return etag;
}

void S3Client::complete_multipart_upload(const std::string& bucket, const std::string& key,
                                         const std::string& upload_id, const std::vector<std::string>& part_etags,
                                         bool create_only) {
  std::string body = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < part_etags.size(); ++i) {
    body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>\"" + xml_escape(part_etags[i]) +
            "\"</ETag></Part>";
  }
  body += "</CompleteMultipartUpload>";
  Call c{.method = "POST",
         .bucket = bucket,
         .key = key,
         .query = {{"uploadId", upload_id}},
         .headers = {{"Content-Type", "application/xml"}},
         .body = body,
         .create_only = create_only};
  HttpResponse r = call(c, "completing multipart upload of s3://" + bucket + "/" + key);
  // S3 may answer 200 with an <Error> body when completion fails late.
  if (r.body.find("<Error>") != std::string::npos) {
    S3ErrorBody late = parse_s3_error_body(r.body);
    if (late.is_error_document) {
      HttpResponse as_error = r;
      as_error.status = late.code == "InternalError" ? 500 : 400;
      throw s3_error(as_error, "completing multipart upload of s3://" + bucket + "/" + key, "");
    }
  }
}

void S3Client::abort_multipart_upload(const std::string& bucket, const std::string& key, const std::string& upload_id) {
  Call c{.method = "DELETE", .bucket = bucket, .key = key, .query = {{"uploadId", upload_id}}};
  c.allow_404 = true;  // already gone
  call(c, "aborting multipart upload of s3://" + bucket + "/" + key);
}

std::vector<S3Upload> S3Client::list_multipart_uploads(const std::string& bucket, const std::string& prefix) {
  std::vector<S3Upload> out;
  std::string key_marker, id_marker;
  std::set<std::string> markers_seen;
  for (;;) {
    Call c{.method = "GET", .bucket = bucket, .key = "", .query = {{"uploads", ""}}};
    if (!prefix.empty()) c.query.emplace_back("prefix", prefix);
    if (!key_marker.empty()) c.query.emplace_back("key-marker", key_marker);
    if (!id_marker.empty()) c.query.emplace_back("upload-id-marker", id_marker);
    HttpResponse r = call(c, "listing multipart uploads in s3://" + bucket);
    std::string what = "ListMultipartUploads response of s3://" + bucket + "/" + prefix;
    S3UploadsPage page = parse_list_multipart_uploads(r.body, what);
    out.insert(out.end(), page.uploads.begin(), page.uploads.end());
    if (page.next_key_marker.empty()) break;
    key_marker = page.next_key_marker;
    id_marker = page.next_upload_id_marker;
    // Markers that do not advance would page forever.
    if (!markers_seen.insert(key_marker + '\n' + id_marker).second) {
      throw Error(ErrorKind::kCorrupt, what + " returned the same page markers twice");
    }
  }
  return out;
}

}  // namespace etcdadm

// AWS Signature Version 4 for S3 requests (header signing), written from the published
// specification ("Authenticating Requests: Using the Authorization Header") and checked against
// AWS's worked examples and /usr/bin/aws in test/unit/aws_sigv4_test.cc.
//
// The signer is pure: it takes the request's parts, the credentials, the region and a timestamp,
// and returns the headers to add. Nothing here does I/O.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace etcdadm {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // temporary credentials only
  // When temporary credentials stop working; nullopt for long-lived keys.
  std::optional<std::chrono::system_clock::time_point> expiration;
  std::string source;  // where they came from, for messages ("environment", "profile default", ...)
};

// The payload hash value for requests whose body is not hashed (allowed by S3 over any transport;
// integrity then rests on TLS and on our own end-to-end SHA-256 of the stored bytes).
inline constexpr const char* kUnsignedPayload = "UNSIGNED-PAYLOAD";
// SHA-256 of the empty string, the payload hash of bodiless requests.
inline constexpr const char* kEmptyPayloadSha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct SigV4Request {
  std::string method;
  std::string host;           // as sent in the Host header (host[:port], port only if non-default)
  std::string canonical_uri;  // already URI-encoded path, e.g. "/bucket/my%20key"
  std::vector<std::pair<std::string, std::string>> query;    // decoded names and values
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers to sign (not host/x-amz-date)
  std::string payload_sha256;                                // hex, or kUnsignedPayload
};

struct SigV4Result {
  std::string amz_date;           // x-amz-date value
  std::string authorization;      // Authorization header value
  std::string canonical_request;  // for debugging signature mismatches
  std::string string_to_sign;
};

// "20130524T000000Z"
std::string amz_date(std::chrono::system_clock::time_point t);

// Signs `request`: the signed headers are host, x-amz-date, x-amz-content-sha256 (when present in
// request.headers), x-amz-security-token (added to the signed set when the credentials carry a
// session token) and every header in request.headers. The caller sends the same headers plus
// "x-amz-date" and "Authorization" from the result.
SigV4Result sigv4_sign(const SigV4Request& request, const AwsCredentials& credentials, const std::string& region,
                       const std::string& service, std::chrono::system_clock::time_point now);

// The canonical query string: names and values URI-encoded, sorted by name then value.
std::string sigv4_canonical_query(const std::vector<std::pair<std::string, std::string>>& query);

// Hex SHA-256 of a payload.
std::string sha256_hex(std::string_view data);

}  // namespace etcdadm

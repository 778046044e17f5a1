// What S3 and STS answer, read from their XML (and the container/IMDS credentials JSON): pure
// functions, no I/O, so that broken and hostile answers can be tested and fuzzed on their own
// (bench/fuzz/aws_responses_fuzz.cc). Every function throws etcdadm::Error and nothing else: an
// answer that does not read as what was asked for is kCorrupt (kAuth for credentials), never a
// crash, a std:: exception or a silently wrong number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/backend/s3/aws_sigv4.h"

namespace etcdadm {

struct S3ObjectInfo {
  std::string key;
  uint64_t size = 0;
  int64_t modified_unix_micros = 0;
  std::string etag;
  // HEAD only: Object Lock (x-amz-object-lock-mode, -retain-until-date, -legal-hold).
  std::string lock_mode;
  int64_t retain_until_micros = 0;  // 0: no retention
  bool legal_hold = false;
};

struct S3ListPage {
  std::vector<S3ObjectInfo> objects;
  std::string next_continuation_token;  // "" when this was the last page
};

struct S3Upload {
  std::string key;
  std::string upload_id;
  int64_t initiated_unix_micros = 0;
};

struct S3UploadsPage {
  std::vector<S3Upload> uploads;
  std::string next_key_marker, next_upload_id_marker;  // both "" after the last page
};

// ListObjectsV2. A truncated page without a continuation token, or a <Size> that is not a
// decimal number, is kCorrupt.
S3ListPage parse_list_objects_v2(const std::string& body, const std::string& what);
// ListMultipartUploads.
S3UploadsPage parse_list_multipart_uploads(const std::string& body, const std::string& what);
// CreateMultipartUpload: the upload ID (kCorrupt when there is none).
std::string parse_upload_id(const std::string& body, const std::string& what);

// ListObjectVersions (versioned buckets): every version and delete marker under a prefix.
struct S3ObjectVersion {
  std::string key;
  std::string version_id;  // "null" for an object written while versioning was off or suspended
  bool latest = false;
  bool delete_marker = false;
};
struct S3VersionsPage {
  std::vector<S3ObjectVersion> versions;                // versions and delete markers, in the listing's order
  std::string next_key_marker, next_version_id_marker;  // both "" after the last page
};
S3VersionsPage parse_list_object_versions(const std::string& body, const std::string& what);
// GetBucketVersioning: "Enabled", "Suspended", or "" for a bucket that never had versioning.
std::string parse_bucket_versioning(const std::string& body, const std::string& what);

// One key DeleteObjects could not delete.
struct S3DeleteFailure {
  std::string key, code, message;
};
std::vector<S3DeleteFailure> parse_delete_objects_result(const std::string& body, const std::string& what);

// The <Error> document S3 answers failures with. Never throws: a body that is not such a document
// yields an empty code and (up to 200 bytes of) the body as the message. `region` is the <Region>
// of AuthorizationHeaderMalformed, and only when it is a valid region name (it becomes part of a
// host name).
struct S3ErrorBody {
  std::string code, message, region;
  bool is_error_document = false;  // the body's root element is <Error>
};
S3ErrorBody parse_s3_error_body(const std::string& body);

// An ETag as S3 sends it ("\"abc\"", in a header or a listing) without its quotes.
std::string unquote_etag(std::string etag);

// True for names AWS and S3-compatible servers give regions ("us-east-1", "eu-central-2",
// "garage"): lower-case letters, digits and '-', 1 to 40 characters. A region read from a server
// becomes part of a host name, so nothing else is accepted.
bool is_valid_region_name(const std::string& region);

// An STS AssumeRoleWithWebIdentity response.
AwsCredentials parse_sts_credentials(const std::string& xml);
// Credentials JSON as served by the container endpoint and IMDS; `source` names it in messages.
AwsCredentials parse_credentials_json(const std::string& body, const std::string& source);

}  // namespace etcdadm

// libFuzzer target for what S3 and STS answer (bench/docs/fuzz.md): listings, multipart
// answers, error documents, STS credentials, and the container/IMDS credentials JSON. The endpoint
// is whatever --s3-endpoint names, so its answers are untrusted input. Every input goes through
// every parser; only etcdadm::Error may come out. Anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/fuzz/fuzz_target.h"
#include "store/backend/s3/aws_responses.h"

using etcdadm::fuzz::refused_or_read;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  refused_or_read([&] { etcdadm::parse_list_objects_v2(body, "fuzz ListObjectsV2"); });
  refused_or_read([&] { etcdadm::parse_list_multipart_uploads(body, "fuzz ListMultipartUploads"); });
  refused_or_read([&] { etcdadm::parse_upload_id(body, "fuzz CreateMultipartUpload"); });
  refused_or_read([&] { etcdadm::parse_delete_objects_result(body, "fuzz DeleteObjects"); });
  refused_or_read([&] {
    etcdadm::S3ErrorBody e = etcdadm::parse_s3_error_body(body);
    if (!e.region.empty() && !etcdadm::is_valid_region_name(e.region)) __builtin_trap();
  });
  refused_or_read([&] { etcdadm::parse_sts_credentials(body); });
  refused_or_read([&] { etcdadm::parse_credentials_json(body, "fuzz credentials endpoint"); });
  return 0;
}

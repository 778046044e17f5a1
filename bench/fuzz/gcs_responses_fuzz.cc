// libFuzzer target for what the GCS JSON API and Google's token endpoints answer
// (bench/docs/fuzz.md): object resources, listings, error documents, the Range of an upload session, and
// token answers. The endpoint is whatever --gcs-endpoint names, so its answers are untrusted
// input. Every input goes through every parser; only etcdadm::Error may come out.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/fuzz/fuzz_target.h"
#include "store/backend/gcs/gcs_responses.h"
#include "store/backend/object/oauth_token.h"

using etcdadm::fuzz::refused_or_read;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  refused_or_read([&] { etcdadm::parse_gcs_object(body, "fuzz object"); });
  refused_or_read([&] { etcdadm::parse_gcs_list_page(body, "fuzz objects.list"); });
  refused_or_read([&] { etcdadm::parse_gcs_error_body(body); });
  refused_or_read([&] { etcdadm::parse_persisted_range(body, "fuzz session"); });
  refused_or_read([&] {
    auto t = etcdadm::parse_oauth_token_answer(200, body, "fuzz token endpoint");
    if (t.expires_in.count() < 0 || t.expires_in.count() > 86400) __builtin_trap();
  });
  return 0;
}

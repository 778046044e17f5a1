// What the GCS JSON API and Google's token endpoints answer, read from their JSON: pure functions,
// no I/O, so that broken and hostile answers can be tested and fuzzed on their own
// (bench/fuzz/gcs_responses_fuzz.cc). Every function throws etcdadm::Error and nothing else: a
// field of the wrong type counts as absent, a number that is not one is kCorrupt (kAuth for
// tokens), never a std:: exception or a silently wrong value.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace etcdadm {

struct GcsObjectInfo {
  std::string name;
  uint64_t size = 0;
  int64_t modified_unix_micros = 0;
  std::string generation;
  // A noncurrent generation (listed with versions=true: it has "timeDeleted").
  bool noncurrent = false;
  // What keeps it from deletion: the bucket's retention policy ("retentionExpirationTime", 0 when
  // none) and object holds ("temporaryHold", "eventBasedHold").
  int64_t retention_expires_micros = 0;
  bool temporary_hold = false;
  bool event_based_hold = false;
};

struct GcsListPage {
  std::vector<GcsObjectInfo> objects;
  std::string next_page_token;
};

// An object resource (metadata GET, upload answers).
GcsObjectInfo parse_gcs_object(const std::string& body, const std::string& what);
// objects.list.
GcsListPage parse_gcs_list_page(const std::string& body, const std::string& what);

// The error document GCS answers failures with. Never throws: a body that is not one yields an
// empty reason and (up to 200 bytes of) the body as the message.
struct GcsErrorBody {
  std::string message, reason;
};
GcsErrorBody parse_gcs_error_body(const std::string& body);

// The bytes a resumable session holds, from the Range header of a 308 ("bytes=0-1048575" ->
// 1048576; absent -> 0). kCorrupt when it is not of that form.
uint64_t parse_persisted_range(const std::string& range, const std::string& what);

}  // namespace etcdadm

#include "store/backend/gcs/gcs_responses.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/timefmt.h"

namespace etcdadm {

namespace {

using json = nlohmann::json;

json parse_json(const std::string& body, const std::string& what) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    throw Error(ErrorKind::kCorrupt, what + ": the server's answer is not a JSON object: " + body.substr(0, 200));
  }
  return j;
}

// GCS writes 64-bit numbers as strings ("size": "1024"); a number is taken as well. Anything else
// (another type, or absent) is "".
std::string json_text(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_unsigned()) return std::to_string(it->get<uint64_t>());
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return "";
}

uint64_t decimal(const std::string& text, const std::string& what) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw Error(ErrorKind::kCorrupt, what + ": '" + text.substr(0, 40) + "' is not a byte count");
  }
  return v;
}

GcsObjectInfo object_from_json(const json& j, const std::string& what) {
  if (!j.is_object()) throw Error(ErrorKind::kCorrupt, what + ": an object entry is not a JSON object");
  GcsObjectInfo o;
  o.name = json_text(j, "name");
  std::string size = json_text(j, "size");
  o.size = size.empty() ? 0 : decimal(size, what + " (size of " + o.name.substr(0, 200) + ")");
  auto t = parse_rfc3339(json_text(j, "updated"));
  o.modified_unix_micros = t ? to_unix_micros(*t) : 0;
  o.generation = json_text(j, "generation");
  o.noncurrent = !json_text(j, "timeDeleted").empty();
  if (auto until = parse_rfc3339(json_text(j, "retentionExpirationTime")))
    o.retention_expires_micros = to_unix_micros(*until);
  auto flag = [&](const char* name) {
    auto it = j.find(name);
    return it != j.end() && it->is_boolean() && it->get<bool>();
  };
  o.temporary_hold = flag("temporaryHold");
  o.event_based_hold = flag("eventBasedHold");
  return o;
}

}  // namespace

GcsObjectInfo parse_gcs_object(const std::string& body, const std::string& what) {
  return object_from_json(parse_json(body, what), what);
}

GcsListPage parse_gcs_list_page(const std::string& body, const std::string& what) {
  json j = parse_json(body, what);
  GcsListPage page;
  if (auto items = j.find("items"); items != j.end()) {
    if (!items->is_array()) throw Error(ErrorKind::kCorrupt, what + ": \"items\" is not a list");
    for (const auto& item : *items) page.objects.push_back(object_from_json(item, what));
  }
  page.next_page_token = json_text(j, "nextPageToken");
  return page;
}

GcsErrorBody parse_gcs_error_body(const std::string& body) {
  GcsErrorBody out;
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  auto error = j.is_object() ? j.find("error") : j.end();
  if (j.is_object() && error != j.end() && error->is_object()) {
    out.message = json_text(*error, "message");
    if (auto errors = error->find("errors"); errors != error->end() && errors->is_array() && !errors->empty()) {
      if ((*errors)[0].is_object()) out.reason = json_text((*errors)[0], "reason");
    }
  } else {
    out.message = body.substr(0, 200);
  }
  return out;
}

uint64_t parse_persisted_range(const std::string& range, const std::string& what) {
  if (range.empty()) return 0;
  auto dash = range.find('-');
  if (range.rfind("bytes=0-", 0) != 0 || dash == std::string::npos) {
    throw Error(ErrorKind::kCorrupt, what + ": unreadable Range '" + range.substr(0, 60) + "' of the upload session");
  }
  uint64_t last = decimal(range.substr(dash + 1), what + " (Range of the upload session)");
  if (last == UINT64_MAX) throw Error(ErrorKind::kCorrupt, what + ": Range of the upload session out of bounds");
  return last + 1;
}

}  // namespace etcdadm

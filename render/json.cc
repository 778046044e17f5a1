#include "render/json.h"

#include "common/base64.h"

namespace etcdadm::render {

nlohmann::json time_json(int64_t unix_micros) {
  if (unix_micros == 0) return nullptr;
  return format_rfc3339_micros(from_unix_micros(unix_micros));
}

nlohmann::json time_json(SystemTime t) { return format_rfc3339_micros(t); }

namespace {

// dump() refuses strings that are not UTF-8: the test a JSON document's strings must pass.
bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

void put_bytes_json(nlohmann::json& j, const std::string& name, const std::string& bytes) {
  if (valid_utf8(bytes))
    j[name] = bytes;
  else
    j[name + "Base64"] = base64(bytes);
}

}  // namespace etcdadm::render

#include "render/json.h"

namespace etcdadm::render {

nlohmann::json time_json(int64_t unix_micros) {
  if (unix_micros == 0) return nullptr;
  return format_rfc3339_micros(from_unix_micros(unix_micros));
}

nlohmann::json time_json(SystemTime t) { return format_rfc3339_micros(t); }

}  // namespace etcdadm::render

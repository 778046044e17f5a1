// The vocabulary of etcdadm's JSON (every `-o json` and the sidecar's HTTP answers), so that a
// script reads one name and one form per concept wherever it appears (docs/json.md):
//   - times are RFC 3339 in UTC with six fractional digits ("2026-11-28T06:19:16.000123Z"), and
//     null when unknown, never "" or 0;
//   - member and cluster IDs are lower-case hex without leading zeros, as etcdctl prints them
//     (common/text.h id_hex);
//   - a value that may be unknown is null when it is, never a made-up 0 or "".
//   - bytes that may not be text (keys, values, prefixes) are `name` when they are UTF-8, else
//     `nameBase64`.
// The helpers here are the only way results put those into JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/timefmt.h"

namespace etcdadm::render {

// A time: micros since the Unix epoch; 0 (the form "not recorded" takes in records) is null.
nlohmann::json time_json(int64_t unix_micros);
nlohmann::json time_json(SystemTime t);

// Sets j[name] to `bytes` when they are UTF-8, else j[name + "Base64"] to their base64.
void put_bytes_json(nlohmann::json& j, const std::string& name, const std::string& bytes);

template <typename T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace etcdadm::render

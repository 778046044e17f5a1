// Checked reads of fields from JSON that came from a store or a server (hostile input): a wrong
// type or an out-of-range number is kCorrupt naming where it was read, never undefined behaviour.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>

#include "common/error.h"

namespace etcdadm {

// An integer field, checked. nlohmann converts a float or an out-of-range number with a plain cast:
// undefined behaviour for 2.9e26 into uint64_t (found by the store_metadata fuzz target), a silent
// wrap for -1. nullopt when the field is absent or null; kCorrupt when it is no integer of T's range.
template <typename T>
std::optional<T> integer_field(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<T>::max());
  if (it->is_number_unsigned()) {
    uint64_t v = it->get<uint64_t>();
    if (v <= kMax) return static_cast<T>(v);
  } else if (it->is_number_integer()) {
    int64_t v = it->get<int64_t>();
    if (std::is_signed_v<T> ? v >= static_cast<int64_t>(std::numeric_limits<T>::min()) : v >= 0)
      return static_cast<T>(v);
  }
  throw Error(ErrorKind::kCorrupt, where + ": \"" + key + "\" is not an integer in range");
}

template <typename T>
T required_integer(const nlohmann::json& j, const char* key, const std::string& where) {
  auto v = integer_field<T>(j, key, where);
  if (!v) throw Error(ErrorKind::kCorrupt, where + ": \"" + key + "\" is missing");
  return *v;
}

// A string field: "" when absent or null, kCorrupt when it is something else.
inline std::string string_field(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_string()) throw Error(ErrorKind::kCorrupt, where + ": \"" + key + "\" is not a string");
  return it->get<std::string>();
}

inline std::string required_string(const nlohmann::json& j, const char* key, const std::string& where) {
  std::string v = string_field(j, key, where);
  if (v.empty()) throw Error(ErrorKind::kCorrupt, where + ": \"" + key + "\" is missing");
  return v;
}

inline bool bool_field(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw Error(ErrorKind::kCorrupt, where + ": \"" + key + "\" is not true or false");
  return it->get<bool>();
}

}  // namespace etcdadm

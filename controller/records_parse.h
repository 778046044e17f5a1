// The checks every record of the controllers' is parsed with (controller/records.h), shared by the
// files that parse them (records.cc, records_maintenance.cc) and nothing else.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace etcdadm::records_parse {

// The parsed object, checked to be of `format`: a record of another (newer) format is refused by
// name, so that an older etcdadm never acts on what it does not understand.
nlohmann::json parse_object(const std::string& text, const char* format, const std::string& where);
// A usable member name (a host's, a lease holder's), else kCorrupt.
void check_name(const std::string& name, const std::string& where);
// https://host:port, nothing else: these go into etcd's flags and certificates.
void check_url(const std::string& url, const std::string& where);
// 64 lower-case hex digits (a SHA-256, as the records write them).
bool is_sha256_hex(const std::string& s);
// A field of seconds in (0, a year], `fallback` when absent.
int64_t positive_seconds(const nlohmann::json& j, const char* key, int64_t fallback, const std::string& where);

}  // namespace etcdadm::records_parse

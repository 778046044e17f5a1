#include "store/backend/swift/swift_responses.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/timefmt.h"

namespace etcdadm {

using json = nlohmann::json;

namespace {

json parse(const std::string& body, const std::string& what) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(ErrorKind::kCorrupt, what + " is not JSON: " + body.substr(0, 200));
  return j;
}

std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::vector<SwiftObjectInfo> parse_swift_listing(const std::string& body, const std::string& what) {
  json j = parse(body, what);
  if (!j.is_array()) throw Error(ErrorKind::kCorrupt, what + " is not a list of objects");
  std::vector<SwiftObjectInfo> out;
  for (const auto& o : j) {
    if (!o.is_object()) throw Error(ErrorKind::kCorrupt, what + " lists something that is not an object");
    SwiftObjectInfo info;
    info.name = text(o, "name");
    if (info.name.empty()) continue;  // "subdir" entries of a delimiter listing
    auto bytes = o.find("bytes");
    if (bytes == o.end() || !bytes->is_number_unsigned()) {
      throw Error(ErrorKind::kCorrupt, what + ": the size of " + info.name.substr(0, 200) + " is not a byte count");
    }
    info.size = bytes->get<uint64_t>();
    // "2026-11-25T05:30:00.123450", UTC without a zone.
    std::string modified = text(o, "last_modified");
    auto t = parse_rfc3339(modified.empty() || modified.back() == 'Z' ? modified : modified + "Z");
    info.modified_unix_micros = t ? to_unix_micros(*t) : 0;
    info.etag = text(o, "hash");
    out.push_back(std::move(info));
  }
  return out;
}

std::string keystone_auth_request_json(const KeystoneCredentials& c) {
  json identity;
  json auth;
  if (!c.application_credential_id.empty()) {
    identity = {
        {"methods", {"application_credential"}},
        {"application_credential", {{"id", c.application_credential_id}, {"secret", c.application_credential_secret}}}};
    auth = {{"identity", identity}};  // an application credential is scoped already
  } else {
    json user;
    if (!c.user_id.empty()) {
      user["id"] = c.user_id;
    } else {
      user["name"] = c.user_name;
      user["domain"] = c.user_domain_id.empty() ? json{{"name", c.user_domain_name}} : json{{"id", c.user_domain_id}};
    }
    user["password"] = c.password;
    identity = {{"methods", {"password"}}, {"password", {{"user", user}}}};
    auth = {{"identity", identity}};
    if (!c.project_id.empty()) {
      auth["scope"] = {{"project", {{"id", c.project_id}}}};
    } else if (!c.project_name.empty()) {
      json domain =
          c.project_domain_id.empty() ? json{{"name", c.project_domain_name}} : json{{"id", c.project_domain_id}};
      auth["scope"] = {{"project", {{"name", c.project_name}, {"domain", domain}}}};
    }
  }
  return json{{"auth", auth}}.dump();
}

KeystoneToken parse_keystone_token(const std::string& body, const std::string& interface, const std::string& region,
                                   const std::string& what) {
  json j = parse(body, what);
  auto token = j.find("token");
  if (!j.is_object() || token == j.end() || !token->is_object())
    throw Error(ErrorKind::kAuth, what + " holds no token");
  KeystoneToken out;
  if (auto t = parse_rfc3339(text(*token, "expires_at"))) out.expires_unix_micros = to_unix_micros(*t);
  std::vector<std::string> seen;
  auto catalog = token->find("catalog");
  if (catalog != token->end() && catalog->is_array()) {
    for (const auto& service : *catalog) {
      if (!service.is_object() || text(service, "type") != "object-store") continue;
      auto endpoints = service.find("endpoints");
      if (endpoints == service.end() || !endpoints->is_array()) continue;
      for (const auto& e : *endpoints) {
        if (!e.is_object()) continue;
        std::string r = text(e, "region_id").empty() ? text(e, "region") : text(e, "region_id");
        seen.push_back(text(e, "interface") + "@" + (r.empty() ? "(no region)" : r));
        if (text(e, "interface") != interface) continue;
        if (!region.empty() && region != text(e, "region_id") && region != text(e, "region")) continue;
        out.storage_url = text(e, "url");
        if (!out.storage_url.empty()) return out;
      }
    }
  }
  std::string have;
  for (const auto& s : seen) have += (have.empty() ? "" : ", ") + s;
  throw Error(ErrorKind::kAuth,
              what + ": the catalog has no " + interface + " object-store endpoint" +
                  (region.empty() ? "" : " in region " + region) +
                  " (object-store endpoints: " + (have.empty() ? "none" : have) + ")",
              "set OS_REGION_NAME (and OS_INTERFACE) to one of those, or check that the project has object storage");
}

std::string swift_slo_manifest_json(const std::vector<SwiftSegment>& segments) {
  json j = json::array();
  for (const auto& s : segments) j.push_back({{"path", s.path}, {"etag", s.etag}, {"size_bytes", s.size}});
  return j.dump();
}

SwiftBulkDelete parse_swift_bulk_delete(const std::string& body, const std::string& what) {
  json j = parse(body, what);
  if (!j.is_object()) throw Error(ErrorKind::kCorrupt, what + " is not a delete report");
  SwiftBulkDelete out;
  std::string status = text(j, "Response Status");
  out.status = std::atoi(status.c_str());
  if (out.status == 0) throw Error(ErrorKind::kCorrupt, what + " has no response status: " + body.substr(0, 200));
  auto errors = j.find("Errors");
  if (errors != j.end() && errors->is_array()) {
    for (const auto& e : *errors) {
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_string()) continue;
      if (e[1].get<std::string>() == "Not an SLO manifest") out.not_a_manifest = true;
      out.errors += (out.errors.empty() ? "" : "; ") + e[0].get<std::string>() + ": " + e[1].get<std::string>();
    }
  }
  return out;
}

std::vector<std::string> parse_swift_slo_manifest(const std::string& body, const std::string& what) {
  json j = parse(body, what);
  if (!j.is_array()) throw Error(ErrorKind::kCorrupt, what + " is not a manifest");
  std::vector<std::string> out;
  for (const auto& s : j) {
    if (s.is_object()) out.push_back(text(s, "name").empty() ? text(s, "path") : text(s, "name"));
  }
  return out;
}

}  // namespace etcdadm

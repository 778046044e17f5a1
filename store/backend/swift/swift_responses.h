// What OpenStack Swift and Keystone answer, read from their JSON, and the JSON documents sent to
// them: pure functions, no I/O, tested on their own. Every function throws etcdadm::Error only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace etcdadm {

struct SwiftObjectInfo {
  std::string name;
  uint64_t size = 0;
  int64_t modified_unix_micros = 0;
  std::string etag;  // the MD5 Swift keeps ("hash")
};

// GET container?format=json: [{"name","bytes","last_modified","hash"}, ...]. kCorrupt when it
// is not such a list.
std::vector<SwiftObjectInfo> parse_swift_listing(const std::string& body, const std::string& what);

// Keystone v3 POST /auth/tokens: the request body.
struct KeystoneCredentials {
  // Password: a user by name (with its domain by name or ID) or by ID.
  std::string user_name, user_id, user_domain_name, user_domain_id, password;
  // The project the token is scoped to: by name (with its domain) or by ID.
  std::string project_name, project_id, project_domain_name, project_domain_id;
  // Or an application credential (ID and secret), which carries its own scope.
  std::string application_credential_id, application_credential_secret;
};
std::string keystone_auth_request_json(const KeystoneCredentials& c);

// The answer's token body: when it expires and where object storage is. `interface` is "public",
// "internal" or "admin"; an empty `region` takes the first endpoint of that interface. kAuth when
// the catalog has no object-store endpoint that matches (naming what it has).
struct KeystoneToken {
  std::optional<int64_t> expires_unix_micros;
  std::string storage_url;
};
KeystoneToken parse_keystone_token(const std::string& body, const std::string& interface, const std::string& region,
                                   const std::string& what);

// A static large object's manifest (PUT ?multipart-manifest=put).
struct SwiftSegment {
  std::string path;  // "/container/object"
  std::string etag;
  uint64_t size = 0;
};
std::string swift_slo_manifest_json(const std::vector<SwiftSegment>& segments);
// The answer of DELETE ?multipart-manifest=delete (Accept: application/json), which Swift sends
// with HTTP 200 whatever happened: the status it means, and whether the object was a plain one
// (which that delete refuses: "Not an SLO manifest").
struct SwiftBulkDelete {
  int status = 0;  // 200, 400, ...
  bool not_a_manifest = false;
  std::string errors;  // "path: reason; ..." when status is not 2xx
};
SwiftBulkDelete parse_swift_bulk_delete(const std::string& body, const std::string& what);

// The segment paths of a manifest as GET ?multipart-manifest=get returns it.
std::vector<std::string> parse_swift_slo_manifest(const std::string& body, const std::string& what);

}  // namespace etcdadm

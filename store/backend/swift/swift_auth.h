// How a Swift store (swift://container/prefix, the scheme kops and etcd-manager use) is reached:
// the storage URL and a token, from the OpenStack environment an openrc file sets, first match wins:
//   1. OS_STORAGE_URL + OS_AUTH_TOKEN: already authenticated (python-swiftclient's names);
//   2. OS_AUTH_URL ending in /auth/v1.0 (or OS_AUTH_VERSION=1): Swift's v1 auth (tempauth,
//      swauth) with OS_USERNAME + OS_PASSWORD, answered with X-Storage-Url and X-Auth-Token;
//   3. otherwise Keystone v3 (OS_AUTH_URL, "/v3" added when it names no version): an application
//      credential (OS_APPLICATION_CREDENTIAL_ID + OS_APPLICATION_CREDENTIAL_SECRET), else a password
//      (OS_USERNAME or OS_USER_ID, OS_PASSWORD; OS_USER_DOMAIN_NAME / _ID, default "Default")
//      scoped to a project (OS_PROJECT_NAME or OS_TENANT_NAME, OS_PROJECT_ID or OS_TENANT_ID;
//      OS_PROJECT_DOMAIN_NAME / _ID, else OS_DOMAIN_NAME, else "Default"). The storage URL is the
//      catalog's object-store endpoint for OS_INTERFACE (default public) in OS_REGION_NAME.
// Keystone v2 is gone from OpenStack and refused with that message.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "common/environment.h"
#include "common/http_client.h"
#include "store/backend/swift/swift_responses.h"

namespace etcdadm {

struct SwiftAuthConfig {
  enum class Kind { kPreauthenticated, kV1, kKeystoneV3 };
  Kind kind = Kind::kKeystoneV3;
  std::string auth_url;
  std::string user, key;  // v1
  KeystoneCredentials keystone;
  std::string interface = "public";
  std::string region;
  std::string storage_url, token;  // preauthenticated
  std::string description;         // for messages: "Keystone v3 user admin in project demo at https://..."
};

// The chain above. Throws kAuth naming the variables to set when nothing is configured, and
// kInvalidArgument for unusable settings (Keystone v2, an auth URL that is not http(s)).
SwiftAuthConfig resolve_swift_auth(const Environment& env);

// The storage URL and token, fetched once and again when the token expires (5 minutes early) or
// the server refused it (invalidate). Thread-safe.
class SwiftSession {
 public:
  SwiftSession(SwiftAuthConfig config, HttpOptions http);
  struct Access {
    std::string storage_url;  // no trailing '/': "https://swift.example/v1/AUTH_project"
    std::string token;
  };
  Access access();
  void invalidate();
  const SwiftAuthConfig& config() const { return config_; }
  const HttpOptions& http() const { return http_; }

 private:
  Access authenticate(std::optional<int64_t>& expires_unix_micros);

  SwiftAuthConfig config_;
  HttpOptions http_;
  std::mutex mu_;
  std::optional<Access> cached_;
  std::optional<int64_t> expires_unix_micros_;
};

}  // namespace etcdadm

#include "store/backend/swift/swift_auth.h"

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "store/backend/object/oauth_token.h"

namespace etcdadm {

namespace {

std::string without_trailing_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

SwiftAuthConfig resolve_swift_auth(const Environment& env) {
  SwiftAuthConfig c;
  c.interface = first_non_empty({env.value("OS_INTERFACE"), env.value("OS_ENDPOINT_TYPE"), "public"});
  if (c.interface.size() > 3 && c.interface.ends_with("URL"))
    c.interface = c.interface.substr(0, c.interface.size() - 3);
  c.region = env.value("OS_REGION_NAME");
  if (!env.value("OS_STORAGE_URL").empty() && !env.value("OS_AUTH_TOKEN").empty()) {
    c.kind = SwiftAuthConfig::Kind::kPreauthenticated;
    c.storage_url = without_trailing_slash(env.value("OS_STORAGE_URL"));
    c.token = env.value("OS_AUTH_TOKEN");
    split_url(c.storage_url);
    c.description = "the token in OS_AUTH_TOKEN for " + c.storage_url;
    return c;
  }
  c.auth_url = without_trailing_slash(first_non_empty({env.value("OS_AUTH_URL"), env.value("ST_AUTH")}));
  if (c.auth_url.empty()) {
    throw Error(
        ErrorKind::kAuth, "no OpenStack credentials: OS_AUTH_URL is not set",
        "source the project's openrc file (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME, ...), or set "
        "OS_STORAGE_URL and OS_AUTH_TOKEN");
  }
  split_url(c.auth_url);
  std::string version = first_non_empty(
      {env.value("OS_AUTH_VERSION"), env.value("ST_AUTH_VERSION"), env.value("OS_IDENTITY_API_VERSION")});
  if (c.auth_url.ends_with("/v2.0") || version == "2" || version == "2.0") {
    throw Error(ErrorKind::kInvalidArgument, "Keystone v2 (" + c.auth_url + ") is not supported: OpenStack removed it",
                "use the v3 endpoint (OS_AUTH_URL=https://.../v3, OS_IDENTITY_API_VERSION=3)");
  }
  if (c.auth_url.ends_with("/auth/v1.0") || c.auth_url.ends_with("/v1.0") || version == "1" || version == "1.0") {
    c.kind = SwiftAuthConfig::Kind::kV1;
    c.user = first_non_empty({env.value("OS_USERNAME"), env.value("ST_USER")});
    c.key = first_non_empty({env.value("OS_PASSWORD"), env.value("ST_KEY")});
    if (c.user.empty() || c.key.empty()) {
      throw Error(ErrorKind::kAuth, "Swift v1 auth at " + c.auth_url + " needs OS_USERNAME and OS_PASSWORD");
    }
    c.description = "Swift v1 auth of " + c.user + " at " + c.auth_url;
    return c;
  }
  c.kind = SwiftAuthConfig::Kind::kKeystoneV3;
  if (!c.auth_url.ends_with("/v3")) c.auth_url += "/v3";
  auto& k = c.keystone;
  k.application_credential_id = env.value("OS_APPLICATION_CREDENTIAL_ID");
  k.application_credential_secret = env.value("OS_APPLICATION_CREDENTIAL_SECRET");
  if (!k.application_credential_id.empty()) {
    if (k.application_credential_secret.empty()) {
      throw Error(ErrorKind::kAuth, "OS_APPLICATION_CREDENTIAL_ID is set without OS_APPLICATION_CREDENTIAL_SECRET");
    }
    c.description = "Keystone v3 application credential " + k.application_credential_id + " at " + c.auth_url;
    return c;
  }
  k.user_name = env.value("OS_USERNAME");
  k.user_id = env.value("OS_USER_ID");
  k.password = env.value("OS_PASSWORD");
  if ((k.user_name.empty() && k.user_id.empty()) || k.password.empty()) {
    throw Error(ErrorKind::kAuth, "Keystone v3 at " + c.auth_url + " needs a user and password",
                "set OS_USERNAME (or OS_USER_ID) and OS_PASSWORD, or an application credential "
                "(OS_APPLICATION_CREDENTIAL_ID, OS_APPLICATION_CREDENTIAL_SECRET)");
  }
  k.user_domain_id = env.value("OS_USER_DOMAIN_ID");
  k.user_domain_name = first_non_empty({env.value("OS_USER_DOMAIN_NAME"), env.value("OS_DOMAIN_NAME"), "Default"});
  k.project_id = first_non_empty({env.value("OS_PROJECT_ID"), env.value("OS_TENANT_ID")});
  k.project_name = first_non_empty({env.value("OS_PROJECT_NAME"), env.value("OS_TENANT_NAME")});
  k.project_domain_id = env.value("OS_PROJECT_DOMAIN_ID");
  k.project_domain_name =
      first_non_empty({env.value("OS_PROJECT_DOMAIN_NAME"), env.value("OS_DOMAIN_NAME"), "Default"});
  if (k.project_id.empty() && k.project_name.empty()) {
    throw Error(ErrorKind::kAuth, "Keystone v3 at " + c.auth_url + ": no project to scope the token to",
                "set OS_PROJECT_NAME (or OS_PROJECT_ID): object storage belongs to a project");
  }
  c.description = "Keystone v3 user " + (k.user_name.empty() ? k.user_id : k.user_name) + " in project " +
                  (k.project_name.empty() ? k.project_id : k.project_name) + " at " + c.auth_url;
  return c;
}

SwiftSession::SwiftSession(SwiftAuthConfig config, HttpOptions http)
    : config_(std::move(config)), http_(std::move(http)) {}

SwiftSession::Access SwiftSession::access() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t now = to_unix_micros(std::chrono::system_clock::now());
  constexpr int64_t kRefreshMarginMicros = int64_t{5} * 60 * 1000000;
  if (cached_ && (!expires_unix_micros_ || now + kRefreshMarginMicros < *expires_unix_micros_)) return *cached_;
  std::optional<int64_t> expires;
  cached_ = authenticate(expires);
  expires_unix_micros_ = expires;
  return *cached_;
}

void SwiftSession::invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  if (config_.kind != SwiftAuthConfig::Kind::kPreauthenticated) cached_.reset();
}

SwiftSession::Access SwiftSession::authenticate(std::optional<int64_t>& expires) {
  switch (config_.kind) {
    case SwiftAuthConfig::Kind::kPreauthenticated:
      return Access{config_.storage_url, config_.token};
    case SwiftAuthConfig::Kind::kV1: {
      HttpRequest req;
      req.url = config_.auth_url;
      req.headers = {{"X-Auth-User", config_.user}, {"X-Auth-Key", config_.key}};
      HttpResponse r = send_to_auth_endpoint(req, credentials_http_options(http_), config_.description);
      if (r.status == 401 || r.status == 403) {
        throw Error(ErrorKind::kAuth,
                    config_.description + " refused the credentials (HTTP " + std::to_string(r.status) + ")",
                    "check OS_USERNAME (account:user for tempauth) and OS_PASSWORD");
      }
      Access a{without_trailing_slash(r.header("x-storage-url")), r.header("x-auth-token")};
      if (!r.ok() || a.storage_url.empty() || a.token.empty()) {
        throw Error(ErrorKind::kAuth,
                    config_.description + " gave no storage URL and token (HTTP " + std::to_string(r.status) + ")");
      }
      return a;
    }
    case SwiftAuthConfig::Kind::kKeystoneV3: {
      std::string body = keystone_auth_request_json(config_.keystone);
      HttpRequest req;
      req.method = "POST";
      req.url = config_.auth_url + "/auth/tokens";
      req.headers = {{"Content-Type", "application/json"}};
      req.body = body;
      HttpResponse r = send_to_auth_endpoint(req, credentials_http_options(http_), config_.description);
      if (r.status == 401 || r.status == 403) {
        throw Error(ErrorKind::kAuth,
                    config_.description + " refused the credentials (HTTP " + std::to_string(r.status) + ")",
                    "check OS_USERNAME, OS_PASSWORD, the domains and the project (or the application credential)");
      }
      if (!r.ok()) {
        throw Error(ErrorKind::kAuth,
                    config_.description + ": HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200));
      }
      std::string token = r.header("x-subject-token");
      if (token.empty()) throw Error(ErrorKind::kAuth, config_.description + " answered without X-Subject-Token");
      KeystoneToken t = parse_keystone_token(r.body, config_.interface, config_.region, config_.description);
      expires = t.expires_unix_micros;
      spdlog::debug("Keystone token for {} until {}", t.storage_url,
                    t.expires_unix_micros ? format_rfc3339_seconds(from_unix_micros(*t.expires_unix_micros)) : "?");
      return Access{without_trailing_slash(t.storage_url), token};
    }
  }
  throw Error(ErrorKind::kInternal, "unknown Swift auth kind");
}

}  // namespace etcdadm

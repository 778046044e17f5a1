// OAuth2 access tokens for the GCS JSON API, from Google's "application default credentials":
//   1. STORAGE_EMULATOR_HOST set: no token at all (emulators do not check auth)
//   2. GOOGLE_APPLICATION_CREDENTIALS: a service-account key JSON (a JWT signed RS256 with the
//      key, exchanged at its token_uri) or an authorized-user JSON (refresh-token grant)
//   3. gcloud's well-known file ~/.config/gcloud/application_default_credentials.json
//   4. the GCE/GKE metadata server (workload identity): GCE_METADATA_HOST or
//      metadata.google.internal, header "Metadata-Flavor: Google"
// Tokens are cached and fetched again 5 minutes before they expire.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "common/environment.h"
#include "common/http_client.h"
#include "store/backend/object/oauth_token.h"

namespace etcdadm {

// Tokens for the GCS JSON API; no source: an emulator, which checks none.
using GcsAuth = OAuthTokenCache;

// The chain described above. Throws Error(kAuth) when a configured source is unusable.
std::shared_ptr<GcsAuth> make_gcs_auth(const Environment& env, const HttpOptions& http);

// A token source for a service-account key JSON document (exposed for tests).
std::unique_ptr<OAuthTokenSource> make_service_account_source(const std::string& key_json, const HttpOptions& http);

// RS256 JWT of `claims_json` signed with a PEM private key (exposed for tests).
std::string sign_jwt_rs256(const std::string& claims_json, const std::string& private_key_pem,
                           const std::string& key_id);

}  // namespace etcdadm

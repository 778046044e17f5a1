// OAuth2 bearer tokens, shared by the backends that use them (GCS, Azure Blob with Microsoft Entra
// ID): a source fetches a token (a token endpoint, a metadata server), a cache hands out
// "Bearer ..." and fetches again 5 minutes before the token expires.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/http_client.h"

namespace etcdadm {

struct OAuthToken {
  std::string access_token;
  std::chrono::system_clock::time_point expiry;
};

class OAuthTokenSource {
 public:
  virtual ~OAuthTokenSource() = default;
  virtual std::string name() const = 0;
  virtual OAuthToken fetch() = 0;
};

class OAuthTokenCache {
 public:
  // nullptr source: anonymous requests (emulators).
  explicit OAuthTokenCache(std::unique_ptr<OAuthTokenSource> source);
  // "Bearer <token>", or "" when anonymous. Thread-safe. While a refresh fails, a token that is
  // still valid keeps being used.
  std::string authorization();
  // Forget the cached token (after a 401).
  void invalidate();
  // No source: requests go without credentials, and a refusal cannot be mended by a new token.
  bool anonymous() const { return !source_; }
  std::string source_name() const;

 private:
  std::unique_ptr<OAuthTokenSource> source_;
  std::mutex mu_;
  std::optional<OAuthToken> cached_;
};

// What a token endpoint answers: {"access_token", "expires_in"}, the lifetime a number or a
// decimal string (Azure's metadata server), clamped to [0 s, 24 h], 1 h when absent. kAuth, with
// the server's error and description when it gave them, when `status` is not 2xx or there is no
// token. Pure: tested and fuzzed on its own.
struct OAuthTokenAnswer {
  std::string access_token;
  std::chrono::seconds expires_in{3600};
};
OAuthTokenAnswer parse_oauth_token_answer(long status, const std::string& body, const std::string& what);

// Sends a request to a token or authentication endpoint: tried 4 times on 5xx, 429 and transport
// errors, with backoff. Any other answer is returned as it is.
HttpResponse send_to_auth_endpoint(const HttpRequest& request, const HttpOptions& http, const std::string& what);

// Sends `request` (send_to_auth_endpoint) and reads the answer; a refusal is kAuth with `hint`.
OAuthToken request_oauth_token(const HttpRequest& request, const HttpOptions& http, const std::string& what,
                               const std::string& hint);

}  // namespace etcdadm

#include "store/backend/object/oauth_token.h"

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/retry.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::system_clock;
constexpr auto kRefreshMargin = std::chrono::minutes(5);

}  // namespace

OAuthTokenCache::OAuthTokenCache(std::unique_ptr<OAuthTokenSource> source) : source_(std::move(source)) {}

std::string OAuthTokenCache::authorization() {
  if (!source_) return "";
  std::lock_guard<std::mutex> lock(mu_);
  if (!cached_ || Clock::now() + kRefreshMargin >= cached_->expiry) {
    try {
      cached_ = source_->fetch();
      spdlog::debug("got an access token from {}", source_->name());
    } catch (const Error& e) {
      // Keep using the current token while it is still valid; the next call tries again.
      if (!cached_ || Clock::now() >= cached_->expiry) throw;
      spdlog::warn("refreshing the access token from {} failed ({}); the current one is still valid", source_->name(),
                   e.what());
    }
  }
  return "Bearer " + cached_->access_token;
}

void OAuthTokenCache::invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  cached_.reset();
}

std::string OAuthTokenCache::source_name() const { return source_ ? source_->name() : "none (emulator)"; }

HttpResponse send_to_auth_endpoint(const HttpRequest& request, const HttpOptions& http, const std::string& what) {
  HttpResponse resp;
  with_retries(RetryPolicy{4, std::chrono::milliseconds(200), std::chrono::milliseconds(3000)}, what, [&] {
    HttpClient client(http);
    resp = client.perform(request);
    if (resp.status >= 500 || resp.status == 429) {
      throw Error(ErrorKind::kUnavailable, what + ": HTTP " + std::to_string(resp.status));
    }
  });
  return resp;
}

OAuthToken request_oauth_token(const HttpRequest& request, const HttpOptions& http, const std::string& what,
                               const std::string& hint) {
  HttpResponse resp = send_to_auth_endpoint(request, http, what);
  OAuthTokenAnswer answer;
  try {
    answer = parse_oauth_token_answer(resp.status, resp.body, what);
  } catch (const Error& e) {
    throw Error(ErrorKind::kAuth, e.what(), hint);
  }
  return OAuthToken{answer.access_token, Clock::now() + answer.expires_in};
}

}  // namespace etcdadm

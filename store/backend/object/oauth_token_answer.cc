// parse_oauth_token_answer (store/backend/object/oauth_token.h), apart from the HTTP and caching code: pure, so that
// the fuzz target of the token answers builds it alone.
#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "store/backend/object/oauth_token.h"

namespace etcdadm {

namespace {

std::string text_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

OAuthTokenAnswer parse_oauth_token_answer(long status, const std::string& body, const std::string& what) {
  using json = nlohmann::json;
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  bool object = !j.is_discarded() && j.is_object();
  std::string token = object ? text_field(j, "access_token") : "";
  if (status < 200 || status >= 300 || token.empty()) {
    std::string detail =
        object ? text_field(j, "error") + " " + text_field(j, "error_description") : body.substr(0, 200);
    throw Error(ErrorKind::kAuth, what + ": no token (HTTP " + std::to_string(status) + ") " + detail.substr(0, 300));
  }
  OAuthTokenAnswer out;
  out.access_token = token;
  // A lifetime that is absent, not a number, negative or absurd must not overflow the clock.
  auto it = j.find("expires_in");
  std::optional<double> seconds;
  if (it != j.end() && it->is_number()) seconds = it->get<double>();
  if (it != j.end() && it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    int64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size()) seconds = static_cast<double>(n);
  }
  if (seconds) {
    double v = *seconds >= 0 ? *seconds : 0;  // negative, or NaN
    out.expires_in = std::chrono::seconds(static_cast<int64_t>(std::clamp(v, 0.0, 86400.0)));
  }
  return out;
}

}  // namespace etcdadm

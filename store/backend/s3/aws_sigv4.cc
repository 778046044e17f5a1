#include "store/backend/s3/aws_sigv4.h"

#include <algorithm>
#include <cctype>
#include <ctime>

#include "common/http_client.h"
#include "common/sha256.h"
#include "common/text.h"

namespace etcdadm {

namespace {

// Header values: leading/trailing spaces trimmed, inner runs of spaces collapsed to one.
std::string canonical_value(const std::string& v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view data) { return to_hex(sha256_of(data.data(), data.size())); }

std::string amz_date(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string sigv4_canonical_query(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(query.size());
  for (const auto& [k, v] : query) enc.emplace_back(percent_encode(k), percent_encode(v));
  std::sort(enc.begin(), enc.end());
  std::string out;
  for (const auto& [k, v] : enc) {
    if (!out.empty()) out += '&';
    out += k + "=" + v;
  }
  return out;
}

SigV4Result sigv4_sign(const SigV4Request& request, const AwsCredentials& credentials, const std::string& region,
                       const std::string& service, std::chrono::system_clock::time_point now) {
  SigV4Result r;
  r.amz_date = amz_date(now);
  std::string date = r.amz_date.substr(0, 8);

  std::vector<std::pair<std::string, std::string>> headers;
  headers.emplace_back("host", request.host);
  headers.emplace_back("x-amz-date", r.amz_date);
  bool has_token_header = false;
  for (const auto& [k, v] : request.headers) {
    std::string name = ascii_lower(k);
    if (name == "host" || name == "x-amz-date" || name == "authorization") continue;
    if (name == "x-amz-security-token") has_token_header = true;
    headers.emplace_back(name, canonical_value(v));
  }
  if (!credentials.session_token.empty() && !has_token_header) {
    headers.emplace_back("x-amz-security-token", credentials.session_token);
  }
  std::sort(headers.begin(), headers.end());

  std::string canonical_headers, signed_headers;
  for (const auto& [k, v] : headers) {
    canonical_headers += k + ":" + v + "\n";
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += k;
  }

  r.canonical_request = request.method + "\n" + request.canonical_uri + "\n" + sigv4_canonical_query(request.query) +
                        "\n" + canonical_headers + "\n" + signed_headers + "\n" + request.payload_sha256;
  std::string scope = date + "/" + region + "/" + service + "/aws4_request";
  r.string_to_sign = "AWS4-HMAC-SHA256\n" + r.amz_date + "\n" + scope + "\n" + sha256_hex(r.canonical_request);

  std::string key = hmac_sha256("AWS4" + credentials.secret_access_key, date);
  key = hmac_sha256(key, region);
  key = hmac_sha256(key, service);
  key = hmac_sha256(key, "aws4_request");
  std::string sig = hmac_sha256(key, r.string_to_sign);
  r.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + scope +
                    ", SignedHeaders=" + signed_headers +
                    ", Signature=" + to_hex(reinterpret_cast<const uint8_t*>(sig.data()), sig.size());
  return r;
}

}  // namespace etcdadm

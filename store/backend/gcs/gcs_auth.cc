#include "store/backend/gcs/gcs_auth.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/retry.h"
#include "store/backend/gcs/gcs_responses.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::system_clock;
constexpr const char* kScope = "https://www.googleapis.com/auth/devstorage.read_write";

// POSTs a form to a token endpoint and reads {"access_token", "expires_in"}.
OAuthToken exchange_token(const std::string& url, const std::string& form, const HttpOptions& http,
                          const std::string& what) {
  HttpRequest req;
  req.method = "POST";
  req.url = url;
  req.headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
  req.body = form;
  return request_oauth_token(req, http, what, "check the service account key (is it revoked?) and the token endpoint");
}

class ServiceAccountSource : public OAuthTokenSource {
 public:
  ServiceAccountSource(nlohmann::json key, HttpOptions http) : key_(std::move(key)), http_(std::move(http)) {}
  std::string name() const override { return "service account " + key_.value("client_email", std::string("?")); }
  OAuthToken fetch() override {
    std::string token_uri = key_.value("token_uri", std::string("https://oauth2.googleapis.com/token"));
    auto now = std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
    nlohmann::json claims = {{"iss", key_.value("client_email", "")},
                             {"scope", kScope},
                             {"aud", token_uri},
                             {"iat", now},
                             {"exp", now + 3600}};
    std::string jwt = sign_jwt_rs256(claims.dump(), key_.value("private_key", ""), key_.value("private_key_id", ""));
    return exchange_token(
        token_uri, form_encode({{"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"}, {"assertion", jwt}}),
        http_, "token exchange for " + name());
  }

 private:
  nlohmann::json key_;
  HttpOptions http_;
};

class AuthorizedUserSource : public OAuthTokenSource {
 public:
  AuthorizedUserSource(nlohmann::json creds, HttpOptions http) : creds_(std::move(creds)), http_(std::move(http)) {}
  std::string name() const override { return "authorized user (gcloud application-default login)"; }
  OAuthToken fetch() override {
    return exchange_token(creds_.value("token_uri", std::string("https://oauth2.googleapis.com/token")),
                          form_encode({{"grant_type", "refresh_token"},
                                       {"client_id", creds_.value("client_id", "")},
                                       {"client_secret", creds_.value("client_secret", "")},
                                       {"refresh_token", creds_.value("refresh_token", "")}}),
                          http_, "token refresh for " + name());
  }

 private:
  nlohmann::json creds_;
  HttpOptions http_;
};

class MetadataServerSource : public OAuthTokenSource {
 public:
  explicit MetadataServerSource(std::string host) : host_(std::move(host)) {}
  std::string name() const override { return "GCE metadata server (" + host_ + ")"; }
  OAuthToken fetch() override {
    HttpOptions o;
    o.connect_timeout = std::chrono::milliseconds(1000);
    o.idle_timeout = std::chrono::milliseconds(5000);
    HttpRequest req;
    req.url = "http://" + host_ + "/computeMetadata/v1/instance/service-accounts/default/token";
    req.headers = {{"Metadata-Flavor", "Google"}};
    HttpResponse resp;
    try {
      with_retries(RetryPolicy{3, std::chrono::milliseconds(100), std::chrono::milliseconds(1000)}, name(), [&] {
        HttpClient client(o);
        resp = client.perform(req);
        if (resp.status >= 500) throw Error(ErrorKind::kUnavailable, "HTTP " + std::to_string(resp.status));
      });
    } catch (const Error& e) {
      throw Error(ErrorKind::kAuth,
                  "no GCS credentials: GOOGLE_APPLICATION_CREDENTIALS is not set and the metadata "
                  "server is not reachable (" +
                      std::string(e.what()) + ")",
                  "set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or run on GCE/GKE with workload "
                  "identity");
    }
    OAuthTokenAnswer answer;
    try {
      answer = parse_oauth_token_answer(resp.status, resp.body, name());
    } catch (const Error& e) {
      throw Error(ErrorKind::kAuth, e.what(), "check that the node/pod has a service account with storage access");
    }
    return OAuthToken{answer.access_token, Clock::now() + answer.expires_in};
  }

 private:
  std::string host_;
};

// The fields etcdadm reads from a credentials file must be strings when present: json::value()
// would otherwise throw a type_error that names neither the file nor the field.
void require_string_fields(const nlohmann::json& j, const std::string& where) {
  for (const char* field : {"type", "client_email", "token_uri", "private_key", "private_key_id", "client_id",
                            "client_secret", "refresh_token"}) {
    if (j.contains(field) && !j[field].is_string()) {
      throw Error(ErrorKind::kAuth, where + ": \"" + field + "\" is not a string",
                  "use the key file as Google issued it (gcloud iam service-accounts keys create)");
    }
  }
}

std::unique_ptr<OAuthTokenSource> source_from_file(const std::string& path, const HttpOptions& http) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) {
    throw Error(ErrorKind::kAuth, std::string("cannot read GCS credentials file: ") + e.what(),
                "check GOOGLE_APPLICATION_CREDENTIALS");
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw Error(ErrorKind::kAuth, "GCS credentials file " + path + " is not JSON");
  }
  require_string_fields(j, "GCS credentials file " + path);
  std::string type = j.value("type", "");
  if (type == "service_account") return std::make_unique<ServiceAccountSource>(j, http);
  if (type == "authorized_user") return std::make_unique<AuthorizedUserSource>(j, http);
  throw Error(ErrorKind::kAuth, "GCS credentials file " + path + " has unsupported type '" + type + "'",
              "use a service-account key (type service_account) or gcloud application-default credentials");
}

}  // namespace

std::string sign_jwt_rs256(const std::string& claims_json, const std::string& private_key_pem,
                           const std::string& key_id) {
  nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (!key_id.empty()) header["kid"] = key_id;
  std::string input = base64url(header.dump()) + "." + base64url(claims_json);
  BIO* bio = BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) {
    throw Error(ErrorKind::kAuth, "the service account's private_key is not a readable PEM key",
                "download a fresh JSON key for the service account");
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t sig_len = 0;
  bool ok = EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
            EVP_DigestSignUpdate(ctx, input.data(), input.size()) == 1 &&
            EVP_DigestSignFinal(ctx, nullptr, &sig_len) == 1;
  std::string sig(sig_len, '\0');
  ok = ok && EVP_DigestSignFinal(ctx, reinterpret_cast<unsigned char*>(sig.data()), &sig_len) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  if (!ok) throw Error(ErrorKind::kAuth, "signing the service-account JWT failed (is the key RSA?)");
  sig.resize(sig_len);
  return input + "." + base64url(sig);
}

std::unique_ptr<OAuthTokenSource> make_service_account_source(const std::string& key_json, const HttpOptions& http) {
  nlohmann::json j = nlohmann::json::parse(key_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(ErrorKind::kAuth, "service account key is not a JSON object");
  require_string_fields(j, "service account key");
  return std::make_unique<ServiceAccountSource>(j, http);
}

std::shared_ptr<GcsAuth> make_gcs_auth(const Environment& env, const HttpOptions& http) {
  if (!env.value("STORAGE_EMULATOR_HOST").empty()) return std::make_shared<GcsAuth>(nullptr);
  std::string file = env.value("GOOGLE_APPLICATION_CREDENTIALS");
  if (!file.empty()) return std::make_shared<GcsAuth>(source_from_file(file, http));
  std::string well_known = env.home.empty() ? "" : env.home + "/.config/gcloud/application_default_credentials.json";
  if (!well_known.empty() && path_exists(well_known))
    return std::make_shared<GcsAuth>(source_from_file(well_known, http));
  std::string host = env.value("GCE_METADATA_HOST");
  if (host.empty()) host = "metadata.google.internal";
  return std::make_shared<GcsAuth>(std::make_unique<MetadataServerSource>(host));
}

}  // namespace etcdadm

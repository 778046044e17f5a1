// GCS protocol pieces the emulator cannot exercise, against small local fixtures that speak the
// documented protocol (these are fixtures, not Google's servers): chunked resumable uploads with
// 308 "Resume Incomplete", partial persistence and status queries; the service-account JWT
// exchange (signature checked with the public key); the metadata server; token refresh on 401.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <atomic>
#include <map>
#include <mutex>

#include "common/error.h"
#include "common/fs.h"
#include "store/backend/gcs/gcs_store.h"
#include "test/support/fixture_server.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

using test::FixtureServer;
using test::TempDir;

Environment env_of(std::map<std::string, std::string> vars) { return test::fake_environment(std::move(vars)); }

std::string random_data(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (auto& c : s) {
    x = x * 1103515245 + 12345;
    c = static_cast<char>(x >> 16);
  }
  return s;
}

// The resumable-upload protocol of the GCS JSON API, in memory.
class ResumableFixture {
 public:
  ResumableFixture() {
    fx.server.Get(R"(/storage/v1/b/([^/]+)/o/(.+))", [&](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content(R"({"error":{"code":404,"message":"No such object"}})", "application/json");
    });
    fx.server.Post(R"(/upload/storage/v1/b/([^/]+)/o)", [&](const httplib::Request& req, httplib::Response& res) {
      EXPECT_EQ(req.get_param_value("uploadType"), "resumable");
      EXPECT_EQ(req.get_param_value("ifGenerationMatch"), "0");
      std::lock_guard<std::mutex> lock(mu);
      name = req.get_param_value("name");
      res.set_header("Location", fx.url() + "/upload/session/s1");
      res.status = 200;
    });
    fx.server.Put("/upload/session/s1", [&](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu);
      std::string range = req.get_header_value("Content-Range");
      if (range == "bytes */*") {
        ++status_queries;
        reply_progress(res);
        return;
      }
      // "bytes A-B/T" or "bytes A-B/*" or "bytes */T"
      std::string spec = range.substr(6);
      auto slash = spec.find('/');
      std::string total_s = spec.substr(slash + 1);
      std::optional<uint64_t> total;
      if (total_s != "*") total = std::stoull(total_s);
      if (spec[0] != '*') {
        uint64_t first = std::stoull(spec.substr(0, spec.find('-')));
        EXPECT_EQ(first, stored.size()) << "chunk does not start where the server stopped";
        if (!total) {
          chunk_sizes.push_back(req.body.size());
        }
        size_t keep = req.body.size();
        if (fail_next_partially) {
          fail_next_partially = false;
          keep = keep / 2 / kGcsChunkQuantum * kGcsChunkQuantum;  // the server kept only part of it
          stored += req.body.substr(0, keep);
          res.status = 503;
          return;
        }
        if (fail_next) {
          fail_next = false;
          res.status = 503;
          return;
        }
        stored += req.body.substr(0, keep);
        if (fail_after_persist) {  // the chunk arrived whole, but the 308 answer is "lost"
          fail_after_persist = false;
          res.status = 503;
          return;
        }
      }
      if (total && stored.size() == *total) {
        complete = true;
        nlohmann::json o = {{"name", name}, {"size", std::to_string(stored.size())}, {"generation", "1"}};
        res.set_content(o.dump(), "application/json");
        return;
      }
      reply_progress(res);
    });
    fx.start();
  }

  void reply_progress(httplib::Response& res) {
    if (complete) {
      res.set_content("{}", "application/json");
      return;
    }
    res.status = 308;
    if (!stored.empty()) res.set_header("Range", "bytes=0-" + std::to_string(stored.size() - 1));
  }

  FixtureServer fx;
  std::mutex mu;
  std::string name, stored;
  std::vector<size_t> chunk_sizes;
  int status_queries = 0;
  bool fail_next_partially = false;
  bool fail_next = false;
  bool fail_after_persist = false;
  bool complete = false;
};

TEST(GcsResumableFixture, ChunkedUploadResumesAfterPartialPersistAndServerErrors) {
  ResumableFixture f;
  GcsConfig c;
  c.endpoint = f.fx.url();
  c.retry = RetryPolicy{6, std::chrono::milliseconds(5), std::chrono::milliseconds(20)};
  GcsStore store(std::make_shared<GcsClient>(c, std::make_shared<GcsAuth>(nullptr)), "bkt", "etcd", 1u << 20);
  std::string data = random_data((5u << 20) + 333333);
  auto w = store.create("2026-11-21T07:00:00Z-000001/etcd.backup.gz", false);
  size_t off = 0;
  int chunk_no = 0;
  while (off < data.size()) {
    size_t n = std::min<size_t>(70001, data.size() - off);
    w->write(reinterpret_cast<const uint8_t*>(data.data()) + off, n);
    off += n;
    // Inject faults once the first and second chunks are on their way.
    std::lock_guard<std::mutex> lock(f.mu);
    if (f.chunk_sizes.size() == 1 && chunk_no == 0) {
      f.fail_next_partially = true;
      chunk_no = 1;
    } else if (f.chunk_sizes.size() >= 3 && chunk_no == 1) {
      f.fail_next = true;
      chunk_no = 2;
    } else if (f.chunk_sizes.size() >= 4 && chunk_no == 2) {
      f.fail_after_persist = true;
      chunk_no = 3;
    }
  }
  EXPECT_FALSE(f.complete) << "the object must not exist before commit";
  w->commit();
  EXPECT_TRUE(f.complete);
  EXPECT_EQ(f.name, "etcd/2026-11-21T07:00:00Z-000001/etcd.backup.gz");
  EXPECT_TRUE(f.stored == data);
  EXPECT_GE(f.status_queries, 3);
  EXPECT_FALSE(f.fail_after_persist) << "the lost-answer fault was never injected";
  for (size_t s : f.chunk_sizes) EXPECT_EQ(s % kGcsChunkQuantum, 0u) << s;
}

TEST(GcsResumableFixture, ObjectSmallerThanAChunkIsOneRequest) {
  FixtureServer fx;
  std::string got_name, got_body, got_if;
  fx.server.Get(R"(/storage/v1/b/([^/]+)/o/(.+))", [&](const httplib::Request&, httplib::Response& res) { res.status = 404; });
  fx.server.Post(R"(/upload/storage/v1/b/([^/]+)/o)", [&](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_param_value("uploadType"), "media");
    got_name = req.get_param_value("name");
    got_if = req.get_param_value("ifGenerationMatch");
    got_body = req.body;
    res.set_content(R"({"name":"x","size":"5","generation":"7"})", "application/json");
  });
  fx.start();
  GcsConfig c;
  c.endpoint = fx.url();
  GcsStore store(std::make_shared<GcsClient>(c, std::make_shared<GcsAuth>(nullptr)), "bkt", "", 1u << 20);
  store.write_small("a b/c+d.json", "hello");
  EXPECT_EQ(got_name, "a b/c+d.json");
  EXPECT_EQ(got_body, "hello");
  EXPECT_EQ(got_if, "0");
}

struct RsaKey {
  std::string private_pem, public_pem;
};

RsaKey make_rsa_key() {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  BIO* priv = BIO_new(BIO_s_mem());
  BIO* pub = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(priv, key, nullptr, nullptr, 0, nullptr, nullptr);
  PEM_write_bio_PUBKEY(pub, key);
  auto drain = [](BIO* b) {
    char* p = nullptr;
    long n = BIO_get_mem_data(b, &p);
    return std::string(p, static_cast<size_t>(n));
  };
  RsaKey k{drain(priv), drain(pub)};
  BIO_free(priv);
  BIO_free(pub);
  EVP_PKEY_free(key);
  return k;
}

std::string base64url_decode(std::string s) {
  for (auto& c : s) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (s.size() % 4 != 0) s += '=';
  std::string out(s.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(s.data()),
                          static_cast<int>(s.size()));
  size_t pad = s.size() - s.find_last_not_of('=') - 1;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

bool verify_rs256(const std::string& signed_part, const std::string& sig, const std::string& public_pem) {
  BIO* bio = BIO_new_mem_buf(public_pem.data(), static_cast<int>(public_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                             reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  return ok;
}

// A GCS listing endpoint that only answers to `Bearer <accepted>`.
void serve_listing(FixtureServer& fx, std::function<bool(const std::string&)> accept) {
  fx.server.Get(R"(/storage/v1/b/([^/]+)/o)", [accept](const httplib::Request& req, httplib::Response& res) {
    if (!accept(req.get_header_value("Authorization"))) {
      res.status = 401;
      res.set_content(R"({"error":{"code":401,"message":"Invalid Credentials","errors":[{"reason":"authError"}]}})",
                      "application/json");
      return;
    }
    res.set_content(R"({"kind":"storage#objects","items":[{"name":"etcd/x","size":"3","generation":"1"}]})",
                    "application/json");
  });
}

TEST(GcsTokenFixture, ServiceAccountJwtIsSignedExchangedCachedAndSentAsBearer) {
  RsaKey key = make_rsa_key();
  FixtureServer fx;
  std::atomic<int> token_calls{0};
  std::string token_uri;
  fx.server.Post("/token", [&](const httplib::Request& req, httplib::Response& res) {
    ++token_calls;
    EXPECT_EQ(req.get_param_value("grant_type"), "urn:ietf:params:oauth:grant-type:jwt-bearer");
    std::string jwt = req.get_param_value("assertion");
    auto d1 = jwt.find('.'), d2 = jwt.rfind('.');
    auto header = nlohmann::json::parse(base64url_decode(jwt.substr(0, d1)));
    auto claims = nlohmann::json::parse(base64url_decode(jwt.substr(d1 + 1, d2 - d1 - 1)));
    EXPECT_EQ(header["alg"], "RS256");
    EXPECT_EQ(header["kid"], "key-id-1");
    EXPECT_EQ(claims["iss"], "etcd-backup@proj.iam.gserviceaccount.com");
    EXPECT_EQ(claims["aud"], token_uri);
    EXPECT_EQ(claims["scope"], "https://www.googleapis.com/auth/devstorage.read_write");
    EXPECT_EQ(claims["exp"].get<int64_t>() - claims["iat"].get<int64_t>(), 3600);
    if (!verify_rs256(jwt.substr(0, d2), base64url_decode(jwt.substr(d2 + 1)), key.public_pem)) {
      res.status = 400;
      res.set_content(R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})", "application/json");
      return;
    }
    res.set_content(R"({"access_token":"ya29.fixture","expires_in":3599,"token_type":"Bearer"})", "application/json");
  });
  serve_listing(fx, [](const std::string& auth) { return auth == "Bearer ya29.fixture"; });
  fx.start();
  token_uri = fx.url() + "/token";
  TempDir dir;
  nlohmann::json sa = {{"type", "service_account"},
                       {"project_id", "proj"},
                       {"private_key_id", "key-id-1"},
                       {"private_key", key.private_pem},
                       {"client_email", "etcd-backup@proj.iam.gserviceaccount.com"},
                       {"token_uri", token_uri}};
  write_file_atomic(dir / "sa.json", sa.dump(), 0600);
  GcsSettings settings;
  settings.endpoint = fx.url();
  auto store = open_gcs_store("bkt", "etcd", settings, ObjectStoreSettings{}, env_of({{"GOOGLE_APPLICATION_CREDENTIALS", dir / "sa.json"}}));
  EXPECT_EQ(store->list("").size(), 1u);
  EXPECT_EQ(store->list("").size(), 1u);
  EXPECT_EQ(token_calls.load(), 1) << "the token must be cached";

  // A key the token endpoint does not trust: a clear auth error, not a retry loop.
  RsaKey other = make_rsa_key();
  sa["private_key"] = other.private_pem;
  write_file_atomic(dir / "sa2.json", sa.dump(), 0600);
  auto bad = open_gcs_store("bkt", "etcd", settings, ObjectStoreSettings{}, env_of({{"GOOGLE_APPLICATION_CREDENTIALS", dir / "sa2.json"}}));
  try {
    bad->list("");
    FAIL() << "expected an auth error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAuth);
    EXPECT_NE(std::string(e.what()).find("Invalid JWT Signature"), std::string::npos) << e.what();
  }
}

TEST(GcsTokenFixture, MetadataServerTokenAndRefreshAfter401) {
  FixtureServer fx;
  std::atomic<int> token_calls{0};
  fx.server.Get("/computeMetadata/v1/instance/service-accounts/default/token",
                [&](const httplib::Request& req, httplib::Response& res) {
                  if (req.get_header_value("Metadata-Flavor") != "Google") {
                    res.status = 403;
                    return;
                  }
                  int n = ++token_calls;
                  res.set_content("{\"access_token\":\"tok-" + std::to_string(n) + "\",\"expires_in\":3600}",
                                  "application/json");
                });
  // tok-1 was revoked early: the store must drop it and fetch tok-2 once.
  serve_listing(fx, [](const std::string& auth) { return auth == "Bearer tok-2"; });
  fx.start();
  GcsSettings settings;
  settings.endpoint = fx.url();
  auto store = open_gcs_store("bkt", "etcd", settings, ObjectStoreSettings{}, env_of({{"GCE_METADATA_HOST", fx.host_port()}}));
  EXPECT_EQ(store->list("").size(), 1u);
  EXPECT_EQ(token_calls.load(), 2);
}

TEST(GcsTokenFixture, EmulatorHostMeansNoAuthAndUnknownCredentialTypeIsRejected) {
  auto auth = make_gcs_auth(env_of({{"STORAGE_EMULATOR_HOST", "127.0.0.1:1"}}), HttpOptions{});
  EXPECT_EQ(auth->authorization(), "");
  TempDir dir;
  write_file_atomic(dir / "x.json", R"({"type":"external_account"})");
  EXPECT_THROW(make_gcs_auth(env_of({{"GOOGLE_APPLICATION_CREDENTIALS", dir / "x.json"}}), HttpOptions{}), Error);
  GcsConfig c = resolve_gcs_config(GcsSettings{}, env_of({{"STORAGE_EMULATOR_HOST", "localhost:9199"}}));
  EXPECT_EQ(c.endpoint, "http://localhost:9199");
  EXPECT_EQ(resolve_gcs_config(GcsSettings{}, env_of({})).endpoint, "https://storage.googleapis.com");
}

TEST(GcsTokenFixture, CredentialFieldsOfTheWrongTypeAreRefusedByName) {
  // json::value() threw nlohmann's type_error, which named neither the file nor the field.
  TempDir dir;
  write_file_atomic(dir / "sa.json", R"({"type":"service_account","client_email":5,"private_key":"k"})");
  try {
    make_gcs_auth(env_of({{"GOOGLE_APPLICATION_CREDENTIALS", dir / "sa.json"}}), HttpOptions{});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAuth);
    EXPECT_NE(std::string(e.what()).find("\"client_email\" is not a string"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir / "sa.json"), std::string::npos) << e.what();
  }
  write_file_atomic(dir / "t.json", R"({"type":["service_account"]})");
  EXPECT_THROW(make_gcs_auth(env_of({{"GOOGLE_APPLICATION_CREDENTIALS", dir / "t.json"}}), HttpOptions{}), Error);
  EXPECT_THROW(make_service_account_source(R"({"token_uri":{}})", HttpOptions{}), Error);
  EXPECT_THROW(make_service_account_source("[]", HttpOptions{}), Error);
}

}  // namespace
}  // namespace etcdadm

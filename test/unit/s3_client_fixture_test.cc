// S3 client behaviour the Swift test server cannot show (it is path-style only, single-region and
// has no server-side encryption), against small local fixtures that speak those parts of the S3
// protocol (these are fixtures, not AWS): virtual-hosted addressing, the bucket-region redirect,
// SSE headers, unsigned payloads, session tokens, and TLS verification with a custom CA bundle.
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <mutex>

#include "common/error.h"
#include "store/backend/s3/s3_client.h"
#include "test/support/fixture_server.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

using test::FixtureServer;

struct Seen {
  std::string method, path, host, authorization, content_sha256, token, sse, kms_key, acl_headers;
};

// Every header of `req` that would set an object's ACL (x-amz-acl, x-amz-grant-*), as "name;".
std::string acl_headers_of(const httplib::Request& req) {
  std::string out;
  for (const auto& [name, value] : req.headers) {
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "x-amz-acl" || lower.rfind("x-amz-grant-", 0) == 0) out += lower + ";";
  }
  return out;
}

// Records every request; answers HEAD/GET/PUT of objects and multipart creation minimally.
void record_all(httplib::Server& server, std::mutex& mu, std::vector<Seen>& seen) {
  auto record = [&](const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back({req.method, req.path, req.get_header_value("Host"), req.get_header_value("Authorization"),
                    req.get_header_value("x-amz-content-sha256"), req.get_header_value("x-amz-security-token"),
                    req.get_header_value("x-amz-server-side-encryption"),
                    req.get_header_value("x-amz-server-side-encryption-aws-kms-key-id"), acl_headers_of(req)});
  };
  server.Put(".*", [record](const httplib::Request& req, httplib::Response& res) {
    record(req);
    res.set_header("ETag", "\"e1\"");
  });
  server.Post(".*", [record](const httplib::Request& req, httplib::Response& res) {
    record(req);
    res.set_content("<InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>",
                    "application/xml");
  });
}

// A fixture that records what it is sent (see record_all), started.
struct RecordingFixture {
  RecordingFixture() {
    record_all(fx.server, mu, seen);
    fx.start();
  }
  FixtureServer fx;
  std::mutex mu;
  std::vector<Seen> seen;
};

// Path-style addressing of a fixture (it has no DNS for bucket host names).
S3Config path_style_config(const FixtureServer& fx) {
  S3Config c;
  c.endpoint = fx.url();
  c.path_style = true;
  return c;
}

AwsCredentials creds(std::string token = "") {
  AwsCredentials c;
  c.access_key_id = "AKIDFIXTURE";
  c.secret_access_key = "secret";
  c.session_token = std::move(token);
  return c;
}

TEST(S3ClientFixture, VirtualHostedAddressingPutsTheBucketInTheHostName) {
  RecordingFixture f;
  auto& fx = f.fx;
  auto& seen = f.seen;
  S3Config c;
  c.endpoint = "http://localhost:" + fx.url().substr(fx.url().rfind(':') + 1);
  c.path_style = false;
  S3Client client(c, make_static_credentials(creds()));
  client.put_object("my-bucket", "dir/a b.gz", "x");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].host, "my-bucket." + c.endpoint.substr(7));
  EXPECT_EQ(seen[0].path, "/dir/a b.gz");  // httplib decodes; the wire form was /dir/a%20b.gz
  // A bucket with dots cannot be a DNS label under TLS wildcards: it falls back to path style.
  client.put_object("my.dotted.bucket", "k", "x");
  EXPECT_EQ(seen[1].host, c.endpoint.substr(7));
  EXPECT_EQ(seen[1].path, "/my.dotted.bucket/k");
}

TEST(S3ClientFixture, WrongRegionIsFollowedOnceAndRemembered) {
  FixtureServer fx;
  std::atomic<int> calls{0};
  std::vector<std::string> scopes;
  std::mutex mu;
  fx.server.Get(".*", [&](const httplib::Request& req, httplib::Response& res) {
    ++calls;
    std::string auth = req.get_header_value("Authorization");
    {
      std::lock_guard<std::mutex> lock(mu);
      scopes.push_back(auth.substr(auth.find("Credential="), 60));
    }
    if (auth.find("/eu-west-3/s3/") == std::string::npos) {
      res.status = 301;
      res.set_header("x-amz-bucket-region", "eu-west-3");
      res.set_content("<Error><Code>PermanentRedirect</Code></Error>", "application/xml");
      return;
    }
    res.set_content("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", "application/xml");
  });
  fx.start();
  S3Config c = path_style_config(fx);
  c.region = "us-east-1";
  S3Client client(c, make_static_credentials(creds()));
  EXPECT_TRUE(client.list_objects("b", "", "").objects.empty());
  EXPECT_EQ(client.region(), "eu-west-3");
  EXPECT_EQ(calls.load(), 2);
  client.list_objects("b", "", "");
  EXPECT_EQ(calls.load(), 3) << "the region must be remembered";
}

TEST(S3ClientFixture, ARegionThatIsNoRegionNameIsNeverFollowed) {
  // The region becomes part of the AWS host name: "s3.<region>.amazonaws.com". A server (or
  // anything in between on plain HTTP) naming "attacker.example/#" must not redirect the client.
  FixtureServer fx;
  std::atomic<int> calls{0};
  fx.server.Get(".*", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 400;
    res.set_content("<Error><Code>AuthorizationHeaderMalformed</Code><Message>wrong region</Message>"
                    "<Region>attacker.example/#</Region></Error>",
                    "application/xml");
  });
  fx.start();
  S3Config c = path_style_config(fx);
  c.region = "us-east-1";
  S3Client client(c, make_static_credentials(creds()));
  EXPECT_THROW(client.list_objects("b", "", ""), Error);
  EXPECT_EQ(client.region(), "us-east-1");
  EXPECT_EQ(calls.load(), 1);
}

TEST(S3ClientFixture, AnEndlessAnswerIsCutOffNotBuffered) {
  FixtureServer fx;
  fx.server.Get(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/xml", [](size_t, httplib::DataSink& sink) {
      static const std::string chunk = "<ListBucketResult>" + std::string(1 << 20, ' ');
      return sink.write(chunk.data(), chunk.size());  // until the client hangs up
    });
  });
  fx.start();
  S3Config c = path_style_config(fx);
  S3Client client(c, make_static_credentials(creds()));
  try {
    client.list_objects("b", "", "");
    FAIL() << "an endless listing was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << e.what();
    EXPECT_NE(std::string(e.what()).find("larger than 64 MiB"), std::string::npos) << e.what();
  }
}

TEST(S3ClientFixture, SseUnsignedPayloadAndSessionTokenHeadersAreSentAndSigned) {
  RecordingFixture f;
  auto& fx = f.fx;
  auto& seen = f.seen;
  S3Config c = path_style_config(fx);
  c.sse = "aws:kms";
  c.sse_kms_key_id = "arn:aws:kms:eu-west-1:1:key/abc";
  c.unsigned_payload = true;
  S3Client client(c, make_static_credentials(creds("session-xyz")));
  client.put_object("b", "k", "body");
  client.create_multipart_upload("b", "big");
  client.upload_part("b", "big", "u1", 1, "part");
  ASSERT_EQ(seen.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(seen[i].sse, "aws:kms");
    EXPECT_EQ(seen[i].kms_key, "arn:aws:kms:eu-west-1:1:key/abc");
    EXPECT_NE(seen[i].authorization.find("x-amz-server-side-encryption-aws-kms-key-id"), std::string::npos);
  }
  EXPECT_EQ(seen[2].sse, "") << "parts inherit the upload's encryption";
  // No upload ever carries an ACL: a backup's readers are whoever the bucket policy allows.
  for (const auto& s : seen) EXPECT_EQ(s.acl_headers, "") << s.method << " " << s.path;
  EXPECT_EQ(seen[0].content_sha256, "UNSIGNED-PAYLOAD");
  EXPECT_EQ(seen[0].token, "session-xyz");
  EXPECT_NE(seen[0].authorization.find("x-amz-security-token"), std::string::npos);

  c.unsigned_payload = false;
  S3Client signing(c, make_static_credentials(creds()));
  signing.put_object("b", "k2", "body");
  EXPECT_EQ(seen[3].content_sha256, sha256_hex("body"));
}

TEST(S3ClientFixture, TlsIsVerifiedWithTheGivenCaBundle) {
  test::TempDir dir;
  test::TlsFiles tls = test::make_tls_files(dir.path());
  httplib::SSLServer server(tls.server_cert.c_str(), tls.server_key.c_str());
  server.Get(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", "application/xml");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  S3Config c;
  c.endpoint = "https://127.0.0.1:" + std::to_string(port);
  c.path_style = true;
  c.retry.max_attempts = 1;
  c.http.ca_file = tls.ca_cert;
  EXPECT_NO_THROW(S3Client(c, make_static_credentials(creds())).list_objects("b", "", ""));

  c.http.ca_file = tls.other_ca_cert;  // a CA that did not sign the server's certificate
  try {
    S3Client(c, make_static_credentials(creds())).list_objects("b", "", "");
    ADD_FAILURE() << "expected a TLS error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTls) << e.what();
    EXPECT_NE(e.hint().find("CA bundle"), std::string::npos);
  }
  c.http.verify_tls = false;  // --insecure-skip-tls-verify
  EXPECT_NO_THROW(S3Client(c, make_static_credentials(creds())).list_objects("b", "", ""));
  server.stop();
  t.join();
}

TEST(S3ClientFixture, ResumedReadAnsweredWithTheWholeObjectNeverReachesTheReader) {
  FixtureServer fx;
  fx.server.Get(".*", [](const httplib::Request&, httplib::Response& res) {
    // The whole object with a 2xx that is not 206 (httplib would serve a Range itself for a 200).
    res.status = 203;
    res.set_content("0123456789", "application/octet-stream");
  });
  fx.start();
  S3Config c = path_style_config(fx);
  S3Client client(c, make_static_credentials(creds()));
  std::string got;
  try {
    client.get_object("b", "k", 4, "", [&](const char* d, size_t n) { got.append(d, n); });
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("ignored the Range header"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(got.empty()) << "bytes from offset 0 reached the reader";
  client.get_object("b", "k", 0, "", [&](const char* d, size_t n) { got.append(d, n); });  // no Range: fine
  EXPECT_EQ(got, "0123456789");
}

TEST(S3ClientFixture, NotImplementedIsNotRetried) {
  FixtureServer fx;
  std::atomic<int> calls{0};
  fx.server.Put(".*", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 501;
    res.set_content("<Error><Code>NotImplemented</Code><Message>Server-side encryption is not supported.</Message></Error>",
                    "application/xml");
  });
  fx.start();
  S3Config c = path_style_config(fx);
  c.sse = "AES256";
  S3Client client(c, make_static_credentials(creds()));
  try {
    client.put_object("b", "k", "x");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("Server-side encryption is not supported"), std::string::npos);
  }
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace etcdadm

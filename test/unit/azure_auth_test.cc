// Tests of store/backend/azure/azure_auth.{h,cc}: the Shared Key string to sign (the layout
// Microsoft's "Authorize with Shared Key" page gives, checked end to end by Azurite in
// AzureStoreTest.*) and the configuration chain.
#include "store/backend/azure/azure_auth.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include "common/error.h"
#include "store/backend/azure/azure_store.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

TEST(AzureSharedKey, StringToSignAndSignatureKnownAnswer) {
  AzureSignedRequest r;
  r.method = "PUT";
  r.encoded_path = "/devstoreaccount1/c/backups/a%20b";
  r.query = {{"comp", "block"}, {"blockid", "MDAwMDAwMDAwMQ=="}};
  r.headers = {{"Content-Type", "application/octet-stream"},
               {"If-None-Match", "*"},
               {"x-ms-version", "2021-12-02"},
               {"X-Ms-Date", "Wed, 25 Nov 2026 05:30:00 GMT"},
               {"x-ms-blob-type", "BlockBlob"}};
  r.content_length = 11;
  // Standard headers in their fixed slots (Content-Length empty when 0), x-ms-* lower-cased and
  // sorted, then /account + path and the query parameters sorted by name.
  EXPECT_EQ(azure_string_to_sign("devstoreaccount1", r),
            "PUT\n\n\n11\n\napplication/octet-stream\n\n\n\n*\n\n\n"
            "x-ms-blob-type:BlockBlob\nx-ms-date:Wed, 25 Nov 2026 05:30:00 GMT\nx-ms-version:2021-12-02\n"
            "/devstoreaccount1/devstoreaccount1/c/backups/a%20b\nblockid:MDAwMDAwMDAwMQ==\ncomp:block");
  std::string key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
  auto config = resolve_azure_config({}, test::fake_environment({{"AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true"}}));
  // HMAC-SHA-256 under the decoded key, base64 (computed independently with Python's hmac).
  EXPECT_EQ(azure_shared_key_authorization("devstoreaccount1", config.auth.shared_key, r),
            "SharedKey devstoreaccount1:PwCfvwFYk746MyN7IrQFDTjnrQNyRPNylJCp4aqBZlI=");
  r.content_length = 0;
  r.method = "GET";
  EXPECT_EQ(azure_string_to_sign("a", r).substr(0, 6), "GET\n\n\n");  // no length: an empty line
}

AzureSettings flags(const std::string& endpoint, const std::string& account) {
  AzureSettings s;
  s.endpoint = endpoint;
  s.account = account;
  return s;
}

TEST(AzureConfig, TheChainAsAzuresToolsResolveIt) {
  using test::fake_environment;
  auto dev = resolve_azure_config({}, fake_environment({{"AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true"}}));
  EXPECT_EQ(dev.account, "devstoreaccount1");
  EXPECT_EQ(dev.endpoint, "http://127.0.0.1:10000/devstoreaccount1");
  EXPECT_EQ(dev.auth.shared_key.size(), 64u);

  // kops: the account from AZURE_STORAGE_ACCOUNT, the public endpoint, a key from AZURE_STORAGE_KEY.
  auto key = resolve_azure_config({}, fake_environment({{"AZURE_STORAGE_ACCOUNT", "kopsstate"}, {"AZURE_STORAGE_KEY", "a2V5"}}));
  EXPECT_EQ(key.endpoint, "https://kopsstate.blob.core.windows.net");
  EXPECT_EQ(key.auth.shared_key, "key");
  EXPECT_NE(key.auth.description.find("AZURE_STORAGE_KEY"), std::string::npos);

  auto sas = resolve_azure_config(flags("", "acct"), fake_environment({{"AZURE_STORAGE_SAS_TOKEN", "?sv=2021&sig=x%2F"}}));
  EXPECT_EQ(sas.auth.sas, "sv=2021&sig=x%2F");
  EXPECT_TRUE(sas.auth.shared_key.empty());

  auto cs = resolve_azure_config(
      {}, fake_environment({{"AZURE_STORAGE_CONNECTION_STRING",
                             "DefaultEndpointsProtocol=https;AccountName=x;SharedAccessSignature=sv=1&sig=a==;EndpointSuffix=core.chinacloudapi.cn"}}));
  EXPECT_EQ(cs.endpoint, "https://x.blob.core.chinacloudapi.cn");
  EXPECT_EQ(cs.auth.sas, "sv=1&sig=a==");

  // Entra ID: a service principal, workload identity, else the managed identity.
  auto sp = resolve_azure_config(flags("", "acct"), fake_environment({{"AZURE_TENANT_ID", "t"}, {"AZURE_CLIENT_ID", "c"},
                                                                 {"AZURE_CLIENT_SECRET", "s"}}));
  ASSERT_TRUE(sp.auth.entra);
  EXPECT_NE(sp.auth.description.find("AZURE_CLIENT_SECRET"), std::string::npos);
  auto wi = resolve_azure_config(flags("", "acct"), fake_environment({{"AZURE_TENANT_ID", "t"}, {"AZURE_CLIENT_ID", "c"},
                                                                 {"AZURE_FEDERATED_TOKEN_FILE", "/var/run/token"}}));
  EXPECT_NE(wi.auth.description.find("workload identity"), std::string::npos);
  auto mi = resolve_azure_config(flags("", "acct"), fake_environment({}));
  EXPECT_NE(mi.auth.description.find("managed identity (http://169.254.169.254"), std::string::npos);

  // The flags come first.
  auto flagged = resolve_azure_config(flags("http://127.0.0.1:9/acct/", "acct"), fake_environment({{"AZURE_STORAGE_ACCOUNT", "other"}}));
  EXPECT_EQ(flagged.account, "acct");
  EXPECT_EQ(flagged.endpoint, "http://127.0.0.1:9/acct");

  auto kind = [](const std::map<std::string, std::string>& env) {
    try {
      resolve_azure_config({}, test::fake_environment(env));
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kInternal;
  };
  EXPECT_EQ(kind({}), ErrorKind::kInvalidArgument);  // no account
  EXPECT_EQ(kind({{"AZURE_STORAGE_ACCOUNT", "a"}, {"AZURE_STORAGE_KEY", "not base64!"}}), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind({{"AZURE_STORAGE_CONNECTION_STRING", "AccountName=a;garbage"}}), ErrorKind::kInvalidArgument);
}

// --store-insecure-skip-tls-verify is for the store endpoint only: the Entra token endpoint is
// verified all the same, so an impersonated one never receives the client secret. (Before the fix,
// the flag covered the token endpoint too and the secret was posted to it.)
TEST(AzureConfig, SkippingTlsVerificationOfTheStoreNeverSkipsItForTheTokenEndpoint) {
  test::TempDir dir;
  test::TlsFiles tls = test::make_tls_files(dir.path());
  httplib::SSLServer server(tls.server_cert.c_str(), tls.server_key.c_str());  // signed by a CA nobody trusts here
  std::atomic<int> token_requests{0};
  server.Post(".*", [&](const httplib::Request&, httplib::Response& res) {
    ++token_requests;
    res.set_content(R"({"access_token":"t","expires_in":3600,"token_type":"Bearer"})", "application/json");
  });
  server.Get(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>", "application/xml");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  AzureSettings settings;
  settings.endpoint = url + "/acct";
  settings.account = "acct";
  ObjectStoreSettings object;
  object.insecure_skip_verify = true;
  auto env = test::fake_environment({{"AZURE_TENANT_ID", "tenant"},
                                     {"AZURE_CLIENT_ID", "client"},
                                     {"AZURE_CLIENT_SECRET", "the-client-secret"},
                                     {"AZURE_AUTHORITY_HOST", url + "/"}});
  try {
    open_azure_store("c", "", settings, object, env)->list("");
    ADD_FAILURE() << "the token endpoint's certificate was not verified";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTls) << e.what();
  }
  EXPECT_EQ(token_requests.load(), 0) << "the client secret went to an unverified endpoint";
  server.stop();
  t.join();
}

}  // namespace
}  // namespace etcdadm

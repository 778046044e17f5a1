// The AWS credential chain: order, configuration errors, and the network sources (STS web
// identity, container endpoint, EC2 instance metadata) against small local fixture servers that
// speak those protocols on loopback (these are fixtures, not the real AWS services).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/timefmt.h"
#include "store/backend/s3/aws_credentials.h"
#include "store/backend/s3/aws_responses.h"
#include "store/backend/s3/s3_store.h"
#include "test/support/fixture_server.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

using Env = std::map<std::string, std::string>;
using test::FixtureServer;
using test::TempDir;

Environment env_of(Env vars, std::string home = "/nonexistent-home") {
  return test::fake_environment(std::move(vars), std::move(home));
}

// Metadata endpoints are disabled unless a test points them at a fixture, so no test ever waits
// for 169.254.169.254.
Env base_env() { return {{"AWS_EC2_METADATA_DISABLED", "true"}}; }

AwsCredentials resolve(const Env& vars, const std::string& home = "/nonexistent-home") {
  return make_default_credential_chain(env_of(vars, home), "us-east-1", HttpOptions{})->get();
}

std::string sts_response(const std::string& key, const std::string& expiration) {
  return "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
         "<AssumeRoleWithWebIdentityResult><Credentials>"
         "<AccessKeyId>" + key + "</AccessKeyId><SecretAccessKey>secret-" + key + "</SecretAccessKey>"
         "<SessionToken>token-" + key + "</SessionToken><Expiration>" + expiration + "</Expiration>"
         "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
}

TEST(AwsCredentials, EnvironmentKeysWithSessionToken) {
  Env e = base_env();
  e["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  e["AWS_SECRET_ACCESS_KEY"] = "secret";
  e["AWS_SESSION_TOKEN"] = "tok";
  AwsCredentials c = resolve(e);
  EXPECT_EQ(c.access_key_id, "AKIDENV");
  EXPECT_EQ(c.session_token, "tok");
  EXPECT_EQ(c.source, "environment (AWS_ACCESS_KEY_ID)");
}

TEST(AwsCredentials, EtcdManagerVariablesComeFirst) {
  Env e = base_env();
  e["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  e["AWS_SECRET_ACCESS_KEY"] = "secret";
  e["S3_ACCESS_KEY_ID"] = "minio";
  e["S3_SECRET_ACCESS_KEY"] = "minio-secret";
  EXPECT_EQ(resolve(e).access_key_id, "minio");
}

TEST(AwsCredentials, HalfAKeyPairIsAnError) {
  Env e = base_env();
  e["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  try {
    resolve(e);
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kAuth);
    EXPECT_NE(std::string(err.what()).find("AWS_SECRET_ACCESS_KEY"), std::string::npos);
  }
}

TEST(AwsCredentials, SharedFilesWithProfile) {
  TempDir dir;
  make_dirs(dir.path() + "/.aws");
  write_file_atomic(dir.path() + "/.aws/credentials",
                    "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s1\n\n"
                    "[prod]\naws_access_key_id=AKIDPROD\naws_secret_access_key=s2\naws_session_token = t2\n");
  write_file_atomic(dir.path() + "/.aws/config",
                    "[default]\nregion = eu-west-1\n[profile prod]\nregion = ap-south-1\ns3 =\n  addressing_style = path\n");
  EXPECT_EQ(resolve(base_env(), dir.path()).access_key_id, "AKIDDEFAULT");
  Env e = base_env();
  e["AWS_PROFILE"] = "prod";
  AwsCredentials c = resolve(e, dir.path());
  EXPECT_EQ(c.access_key_id, "AKIDPROD");
  EXPECT_EQ(c.session_token, "t2");
  EXPECT_EQ(c.source, "profile prod");
  EXPECT_EQ(aws_profile_region(env_of(e, dir.path())), "ap-south-1");
  // The profile's region feeds the S3 region when no flag or variable sets it.
  EXPECT_EQ(resolve_s3_config(S3Settings{}, env_of(e, dir.path())).region, "ap-south-1");
  e["AWS_REGION"] = "us-west-2";
  EXPECT_EQ(resolve_s3_config(S3Settings{}, env_of(e, dir.path())).region, "us-west-2");
}

TEST(AwsCredentials, EnvironmentBeatsSharedFiles) {
  TempDir dir;
  make_dirs(dir.path() + "/.aws");
  write_file_atomic(dir.path() + "/.aws/credentials", "[default]\naws_access_key_id=AKIDFILE\naws_secret_access_key=s\n");
  Env e = base_env();
  e["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  e["AWS_SECRET_ACCESS_KEY"] = "secret";
  EXPECT_EQ(resolve(e, dir.path()).access_key_id, "AKIDENV");
}

TEST(AwsCredentials, MissingNamedProfileIsAnError) {
  Env e = base_env();
  e["AWS_PROFILE"] = "nope";
  try {
    resolve(e);
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kAuth);
    EXPECT_NE(std::string(err.what()).find("AWS_PROFILE=nope"), std::string::npos);
  }
}

TEST(AwsCredentials, NothingConfiguredSaysWhereItLooked) {
  try {
    resolve(base_env());
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kAuth);
    std::string m = err.what();
    EXPECT_NE(m.find("no AWS credentials found"), std::string::npos);
    EXPECT_NE(m.find("EC2 instance metadata"), std::string::npos);
  }
}

TEST(AwsCredentials, WebIdentityAgainstStsFixtureAndRefreshBeforeExpiry) {
  TempDir dir;
  std::string token_file = dir.path() + "/token";
  write_file_atomic(token_file, "jwt-1\n");
  FixtureServer sts;
  std::atomic<int> calls{0};
  std::string last_token, last_role, last_session;
  sts.server.Post("/", [&](const httplib::Request& req, httplib::Response& res) {
    ++calls;
    last_token = req.get_param_value("WebIdentityToken");
    last_role = req.get_param_value("RoleArn");
    last_session = req.get_param_value("RoleSessionName");
    if (req.get_param_value("Action") != "AssumeRoleWithWebIdentity") {
      res.status = 400;
      return;
    }
    // The first credentials expire within the refresh margin, so the next get() must refresh.
    auto exp = std::chrono::system_clock::now() + (calls == 1 ? std::chrono::minutes(2) : std::chrono::hours(1));
    res.set_content(sts_response("ASIA" + std::to_string(calls.load()), format_rfc3339_seconds(exp)), "text/xml");
  });
  sts.start();
  Env e = base_env();
  e["AWS_WEB_IDENTITY_TOKEN_FILE"] = token_file;
  e["AWS_ROLE_ARN"] = "arn:aws:iam::123456789012:role/etcd-backup";
  e["AWS_ENDPOINT_URL_STS"] = sts.url() + "/";
  auto chain = make_default_credential_chain(env_of(e), "us-east-1", HttpOptions{});
  AwsCredentials c1 = chain->get();
  EXPECT_EQ(c1.access_key_id, "ASIA1");
  EXPECT_EQ(c1.session_token, "token-ASIA1");
  EXPECT_EQ(last_token, "jwt-1");
  EXPECT_EQ(last_role, "arn:aws:iam::123456789012:role/etcd-backup");
  EXPECT_EQ(last_session, "etcdadm");
  // Kubernetes rotated the projected token: the refresh must send the new one.
  write_file_atomic(token_file, "jwt-2\n");
  AwsCredentials c2 = chain->get();
  EXPECT_EQ(c2.access_key_id, "ASIA2");
  EXPECT_EQ(last_token, "jwt-2");
  AwsCredentials c3 = chain->get();  // fresh for an hour: cached
  EXPECT_EQ(c3.access_key_id, "ASIA2");
  EXPECT_EQ(calls.load(), 2);
}

TEST(AwsCredentials, WebIdentityRejectedByStsFixtureIsAClearError) {
  TempDir dir;
  write_file_atomic(dir.path() + "/token", "jwt");
  FixtureServer sts;
  sts.server.Post("/", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 403;
    res.set_content(
        "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>Not authorized to perform "
        "sts:AssumeRoleWithWebIdentity</Message></Error></ErrorResponse>",
        "text/xml");
  });
  sts.start();
  Env e = base_env();
  e["AWS_WEB_IDENTITY_TOKEN_FILE"] = dir.path() + "/token";
  e["AWS_ROLE_ARN"] = "arn:aws:iam::1:role/r";
  e["AWS_ENDPOINT_URL_STS"] = sts.url() + "/";
  try {
    resolve(e);
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kAuth);
    EXPECT_NE(std::string(err.what()).find("AccessDenied: Not authorized"), std::string::npos) << err.what();
  }
}

TEST(AwsCredentials, InstanceMetadataV2AgainstImdsFixture) {
  FixtureServer imds;
  std::atomic<int> token_calls{0};
  auto require_token = [](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("X-aws-ec2-metadata-token") != "imds-session") {
      res.status = 401;
      return false;
    }
    return true;
  };
  imds.server.Put("/latest/api/token", [&](const httplib::Request& req, httplib::Response& res) {
    ++token_calls;
    EXPECT_EQ(req.get_header_value("X-aws-ec2-metadata-token-ttl-seconds"), "21600");
    res.set_content("imds-session", "text/plain");
  });
  imds.server.Get("/latest/meta-data/iam/security-credentials/", [&](const httplib::Request& req, httplib::Response& res) {
    if (require_token(req, res)) res.set_content("etcd-node-role", "text/plain");
  });
  imds.server.Get("/latest/meta-data/iam/security-credentials/etcd-node-role",
                  [&](const httplib::Request& req, httplib::Response& res) {
                    if (!require_token(req, res)) return;
                    res.set_content(R"({"Code":"Success","AccessKeyId":"ASIAIMDS","SecretAccessKey":"s",)"
                                    R"("Token":"t","Expiration":"2099-01-01T00:00:00Z"})",
                                    "application/json");
                  });
  imds.start();
  Env e;
  e["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds.url();
  AwsCredentials c = resolve(e);
  EXPECT_EQ(c.access_key_id, "ASIAIMDS");
  EXPECT_EQ(c.session_token, "t");
  EXPECT_EQ(c.source, "EC2 instance metadata (role etcd-node-role)");
  EXPECT_EQ(token_calls.load(), 1);
}

TEST(AwsCredentials, ContainerEndpointFixtureWithAuthorizationToken) {
  FixtureServer ecs;
  ecs.server.Get("/creds", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") != "pod-identity-token") {
      res.status = 401;
      return;
    }
    res.set_content(R"({"AccessKeyId":"ASIAPOD","SecretAccessKey":"s","Token":"t","Expiration":"2099-01-01T00:00:00Z"})",
                    "application/json");
  });
  ecs.start();
  TempDir dir;
  write_file_atomic(dir.path() + "/token", "pod-identity-token\n");
  Env e = base_env();
  e["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = ecs.url() + "/creds";
  e["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = dir.path() + "/token";
  EXPECT_EQ(resolve(e).access_key_id, "ASIAPOD");
}

TEST(AwsCredentials, StsResponseParsing) {
  AwsCredentials c = parse_sts_credentials(sts_response("ASIAX", "2019-11-09T13:34:41Z"));
  EXPECT_EQ(c.access_key_id, "ASIAX");
  EXPECT_EQ(c.secret_access_key, "secret-ASIAX");
  ASSERT_TRUE(c.expiration.has_value());
  EXPECT_EQ(format_rfc3339_seconds(*c.expiration), "2019-11-09T13:34:41Z");
}

}  // namespace
}  // namespace etcdadm

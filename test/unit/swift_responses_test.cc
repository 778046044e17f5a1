// Tests of store/backend/swift/swift_responses.{h,cc}: the Keystone v3 request and token answer
// (shapes from the Identity API v3 reference), listings and manifests (and the segment sizes of
// swift_store.h).
#include "store/backend/swift/swift_responses.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/timefmt.h"
#include "store/backend/swift/swift_store.h"

namespace etcdadm {
namespace {

TEST(Keystone, RequestBodiesAsTheIdentityApiDefinesThem) {
  KeystoneCredentials by_name;
  by_name.user_name = "u";
  by_name.user_domain_name = "Default";
  by_name.password = "p";
  by_name.project_name = "kops";
  by_name.project_domain_name = "Default";
  EXPECT_EQ(nlohmann::json::parse(keystone_auth_request_json(by_name)),
            nlohmann::json::parse(R"({"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"u",
              "domain":{"name":"Default"},"password":"p"}}},"scope":{"project":{"name":"kops","domain":{"name":"Default"}}}}})"));
  KeystoneCredentials by_id;
  by_id.user_id = "123";
  by_id.password = "p";
  by_id.project_id = "456";
  EXPECT_EQ(nlohmann::json::parse(keystone_auth_request_json(by_id)),
            nlohmann::json::parse(R"({"auth":{"identity":{"methods":["password"],"password":{"user":{"id":"123",
              "password":"p"}}},"scope":{"project":{"id":"456"}}}})"));
  KeystoneCredentials app;
  app.application_credential_id = "a";
  app.application_credential_secret = "s";
  EXPECT_EQ(nlohmann::json::parse(keystone_auth_request_json(app)),
            nlohmann::json::parse(R"({"auth":{"identity":{"methods":["application_credential"],
              "application_credential":{"id":"a","secret":"s"}}}})"));
}

TEST(Keystone, TheTokensCatalogGivesTheStorageUrl) {
  std::string body = R"({"token":{"expires_at":"2026-11-25T06:30:00.000000Z","catalog":[
    {"type":"identity","endpoints":[{"interface":"public","region_id":"R1","url":"https://k/v3"}]},
    {"type":"object-store","endpoints":[
      {"interface":"internal","region_id":"R1","url":"http://10.0.0.1/v1/AUTH_p"},
      {"interface":"public","region_id":"R2","url":"https://r2/v1/AUTH_p"},
      {"interface":"public","region":"R1","url":"https://r1/v1/AUTH_p"}]}]}})";
  auto t = parse_keystone_token(body, "public", "R1", "k");
  EXPECT_EQ(t.storage_url, "https://r1/v1/AUTH_p");
  EXPECT_EQ(*t.expires_unix_micros, to_unix_micros(*parse_rfc3339("2026-11-25T06:30:00Z")));
  EXPECT_EQ(parse_keystone_token(body, "internal", "", "k").storage_url, "http://10.0.0.1/v1/AUTH_p");
  EXPECT_EQ(parse_keystone_token(body, "public", "", "k").storage_url, "https://r2/v1/AUTH_p");
  try {
    parse_keystone_token(body, "public", "R9", "k");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAuth);
    EXPECT_NE(std::string(e.what()).find("internal@R1, public@R2, public@R1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_keystone_token(R"({"error":{}})", "public", "", "k"), Error);
  EXPECT_THROW(parse_keystone_token("not json", "public", "", "k"), Error);
}

TEST(SwiftResponses, ListingsManifestsAndSegmentSizes) {
  auto l = parse_swift_listing(R"([{"name":"b/x","bytes":12,"hash":"abc","last_modified":"2026-11-25T05:30:00.123450",
                                     "content_type":"application/octet-stream"},{"subdir":"b/y/"}])",
                               "t");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "b/x");
  EXPECT_EQ(l[0].size, 12u);
  EXPECT_EQ(l[0].etag, "abc");
  EXPECT_EQ(l[0].modified_unix_micros, to_unix_micros(*parse_rfc3339("2026-11-25T05:30:00.123450Z")));
  EXPECT_THROW(parse_swift_listing(R"([{"name":"x","bytes":-1}])", "t"), Error);
  EXPECT_THROW(parse_swift_listing(R"({"name":"x"})", "t"), Error);

  EXPECT_EQ(swift_slo_manifest_json({{"/c_segments/o/1/00000001", "e1", 5}, {"/c_segments/o/1/00000002", "e2", 3}}),
            R"([{"etag":"e1","path":"/c_segments/o/1/00000001","size_bytes":5},{"etag":"e2","path":"/c_segments/o/1/00000002","size_bytes":3}])");
  EXPECT_EQ(parse_swift_slo_manifest(R"([{"name":"/c_segments/a","hash":"h","bytes":5}])", "t"),
            std::vector<std::string>{"/c_segments/a"});

  // DELETE ?multipart-manifest=delete reports with HTTP 200 whatever happened (Swift 2.30's answers).
  auto plain = parse_swift_bulk_delete(R"({"Response Status": "400 Bad Request", "Response Body": "", "Number Deleted": 0,
      "Number Not Found": 0, "Errors": [["/c1/a/x", "Not an SLO manifest"]]})", "t");
  EXPECT_EQ(plain.status, 400);
  EXPECT_TRUE(plain.not_a_manifest);
  auto gone = parse_swift_bulk_delete(R"({"Response Status": "200 OK", "Response Body": "", "Number Deleted": 0,
      "Number Not Found": 1, "Errors": []})", "t");
  EXPECT_EQ(gone.status, 200);
  EXPECT_FALSE(gone.not_a_manifest);
  auto denied = parse_swift_bulk_delete(R"({"Response Status": "403 Forbidden", "Errors": [["/c/x", "403 Forbidden"]]})", "t");
  EXPECT_EQ(denied.errors, "/c/x: 403 Forbidden");
  EXPECT_THROW(parse_swift_bulk_delete("Number Deleted: 1", "t"), Error);

  EXPECT_EQ(swift_segment_size(8u << 20, 1), 8u << 20);
  EXPECT_EQ(swift_segment_size(8u << 20, 100), 8u << 20);
  EXPECT_EQ(swift_segment_size(8u << 20, 101), 16u << 20);
  EXPECT_EQ(swift_segment_size(8u << 20, 1000), size_t{8} << 29);  // 8 MiB x 2^9
  EXPECT_EQ(swift_segment_size(size_t{4} << 30, 1000), size_t{5} << 30);  // Swift's 5 GiB object limit
}

}  // namespace
}  // namespace etcdadm

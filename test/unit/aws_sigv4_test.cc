// SigV4 known answers: the four worked examples of AWS's "Signature Calculations for the
// Authorization Header" page (S3 API reference), byte for byte.
#include <gtest/gtest.h>

#include "common/timefmt.h"
#include "store/backend/s3/aws_sigv4.h"

namespace etcdadm {
namespace {

AwsCredentials example_credentials() {
  AwsCredentials c;
  c.access_key_id = "AKIAIOSFODNN7EXAMPLE";
  c.secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  return c;
}

std::chrono::system_clock::time_point example_time() { return *parse_rfc3339("2013-05-24T00:00:00Z"); }

std::string signature_of(const SigV4Result& r) { return r.authorization.substr(r.authorization.find("Signature=") + 10); }

TEST(AwsSigV4, GetObjectWithRangeMatchesAwsExample) {
  SigV4Request req;
  req.method = "GET";
  req.host = "examplebucket.s3.amazonaws.com";
  req.canonical_uri = "/test.txt";
  req.headers = {{"Range", "bytes=0-9"}, {"x-amz-content-sha256", kEmptyPayloadSha256}};
  req.payload_sha256 = kEmptyPayloadSha256;
  SigV4Result r = sigv4_sign(req, example_credentials(), "us-east-1", "s3", example_time());
  EXPECT_EQ(r.amz_date, "20130524T000000Z");
  EXPECT_EQ(r.canonical_request,
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
            "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(r.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(r.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(AwsSigV4, PutObjectMatchesAwsExample) {
  std::string body = "Welcome to Amazon S3.";
  SigV4Request req;
  req.method = "PUT";
  req.host = "examplebucket.s3.amazonaws.com";
  req.canonical_uri = "/test%24file.text";
  req.payload_sha256 = sha256_hex(body);
  EXPECT_EQ(req.payload_sha256, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  req.headers = {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                 {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                 {"x-amz-content-sha256", req.payload_sha256}};
  SigV4Result r = sigv4_sign(req, example_credentials(), "us-east-1", "s3", example_time());
  EXPECT_EQ(signature_of(r), "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
  EXPECT_NE(r.authorization.find("SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class"),
            std::string::npos);
}

TEST(AwsSigV4, GetBucketLifecycleMatchesAwsExample) {
  SigV4Request req;
  req.method = "GET";
  req.host = "examplebucket.s3.amazonaws.com";
  req.canonical_uri = "/";
  req.query = {{"lifecycle", ""}};
  req.headers = {{"x-amz-content-sha256", kEmptyPayloadSha256}};
  req.payload_sha256 = kEmptyPayloadSha256;
  SigV4Result r = sigv4_sign(req, example_credentials(), "us-east-1", "s3", example_time());
  EXPECT_EQ(signature_of(r), "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(AwsSigV4, ListObjectsMatchesAwsExample) {
  SigV4Request req;
  req.method = "GET";
  req.host = "examplebucket.s3.amazonaws.com";
  req.canonical_uri = "/";
  req.query = {{"prefix", "J"}, {"max-keys", "2"}};  // unsorted on purpose
  req.headers = {{"x-amz-content-sha256", kEmptyPayloadSha256}};
  req.payload_sha256 = kEmptyPayloadSha256;
  SigV4Result r = sigv4_sign(req, example_credentials(), "us-east-1", "s3", example_time());
  EXPECT_EQ(signature_of(r), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(AwsSigV4, CanonicalQueryEncodesAndSorts) {
  EXPECT_EQ(sigv4_canonical_query({{"prefix", "a b/c+d"}, {"list-type", "2"}, {"continuation-token", "x=y"}}),
            "continuation-token=x%3Dy&list-type=2&prefix=a%20b%2Fc%2Bd");
  EXPECT_EQ(sigv4_canonical_query({{"uploads", ""}}), "uploads=");
}

TEST(AwsSigV4, SessionTokenIsSigned) {
  AwsCredentials c = example_credentials();
  c.session_token = "token123";
  SigV4Request req;
  req.method = "GET";
  req.host = "h";
  req.canonical_uri = "/";
  req.payload_sha256 = kEmptyPayloadSha256;
  SigV4Result r = sigv4_sign(req, c, "us-east-1", "s3", example_time());
  EXPECT_NE(r.authorization.find("SignedHeaders=host;x-amz-date;x-amz-security-token"), std::string::npos);
  EXPECT_NE(r.canonical_request.find("x-amz-security-token:token123\n"), std::string::npos);
}

}  // namespace
}  // namespace etcdadm

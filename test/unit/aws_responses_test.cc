// Tests of store/backend/s3/aws_responses.{h,cc}: what S3 and STS answer, read by pure parsers:
// known answers, and the hostile or broken ones each refused with etcdadm::Error (never a std::
// exception, a wrapped-around number or an endless listing).
#include "store/backend/s3/aws_responses.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "test/support/error_of.h"

namespace etcdadm {
namespace {

using test::kind_of;

std::string listing(const std::string& size) {
  return "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>p/a</Key><Size>" + size +
         "</Size><ETag>&quot;e1&quot;</ETag><LastModified>2026-11-24T16:37:35.000Z</LastModified></Contents>"
         "</ListBucketResult>";
}

}  // namespace

TEST(AwsResponses, ListObjectsKnownAnswer) {
  S3ListPage p = parse_list_objects_v2(listing("18446744073709551615"), "t");
  ASSERT_EQ(p.objects.size(), 1u);
  EXPECT_EQ(p.objects[0].key, "p/a");
  EXPECT_EQ(p.objects[0].size, 18446744073709551615ull);
  EXPECT_EQ(p.objects[0].etag, "e1");
  EXPECT_EQ(p.objects[0].modified_unix_micros, int64_t{1795538255} * 1000000);
  EXPECT_EQ(p.next_continuation_token, "");
}

TEST(AwsResponses, SizesThatAreNoByteCountAreCorrupt) {
  // std::stoull read "-1" as 2^64-1 and threw std::invalid_argument for the others.
  for (const char* bad : {"-1", "abc", "1 2", "0x10", "18446744073709551616", " 5", "5 "}) {
    EXPECT_EQ(kind_of([&] { parse_list_objects_v2(listing(bad), "t"); }), ErrorKind::kCorrupt) << bad;
  }
  EXPECT_EQ(parse_list_objects_v2(listing(""), "t").objects[0].size, 0u);  // servers omit it for empty objects
}

TEST(AwsResponses, TruncatedPagesMustSayWhereToGoOn) {
  EXPECT_EQ(kind_of([] { parse_list_objects_v2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "t"); }),
            ErrorKind::kCorrupt);
  EXPECT_EQ(kind_of([] {
              parse_list_multipart_uploads("<ListMultipartUploadsResult><IsTruncated>true</IsTruncated></ListMultipartUploadsResult>", "t");
            }),
            ErrorKind::kCorrupt);
  EXPECT_EQ(kind_of([] { parse_upload_id("<InitiateMultipartUploadResult/>", "t"); }), ErrorKind::kCorrupt);
  EXPECT_EQ(kind_of([] { parse_list_objects_v2("<ListBucketResult>", "t"); }), ErrorKind::kCorrupt);
}

TEST(AwsResponses, DeleteObjectsFailuresKnownAnswer) {
  auto failures = parse_delete_objects_result(
      "<DeleteResult><Deleted><Key>a</Key></Deleted><Error><Key>b</Key><Code>AccessDenied</Code>"
      "<Message>Access Denied</Message></Error></DeleteResult>",
      "t");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].key, "b");
  EXPECT_EQ(failures[0].code, "AccessDenied");
  EXPECT_EQ(failures[0].message, "Access Denied");
  EXPECT_TRUE(parse_delete_objects_result("<DeleteResult/>", "t").empty());
}

TEST(AwsResponses, ExternalEntitiesAreNeverResolved) {
  std::string xxe = "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/hostname\">]>"
                    "<Error><Code>&x;</Code><Message>m</Message></Error>";
  S3ErrorBody e = parse_s3_error_body(xxe);
  EXPECT_EQ(e.code.find_first_not_of(" \n"), std::string::npos) << "the entity must not expand to the file: " << e.code;
}

TEST(AwsResponses, ErrorBodiesNeverThrowAndOnlyRegionNamesCount) {
  S3ErrorBody e = parse_s3_error_body("<Error><Code>AuthorizationHeaderMalformed</Code><Region>eu-central-1</Region></Error>");
  EXPECT_TRUE(e.is_error_document);
  EXPECT_EQ(e.region, "eu-central-1");
  EXPECT_EQ(parse_s3_error_body("<Error><Region>evil.example/#</Region></Error>").region, "");
  EXPECT_EQ(parse_s3_error_body("<Error><Region>EU-WEST-1</Region></Error>").region, "");
  S3ErrorBody junk = parse_s3_error_body(std::string(1000, '<'));
  EXPECT_FALSE(junk.is_error_document);
  EXPECT_EQ(junk.message.size(), 200u);
  EXPECT_TRUE(is_valid_region_name("us-east-1"));
  EXPECT_FALSE(is_valid_region_name(""));
  EXPECT_FALSE(is_valid_region_name(std::string(41, 'a')));
}

TEST(AwsResponses, CredentialsOfTheWrongTypeAreAbsentNotACrash) {
  // json::value() threw nlohmann's type_error for a number where a string belongs.
  EXPECT_EQ(kind_of([] { parse_credentials_json(R"({"AccessKeyId": 5, "SecretAccessKey": "s"})", "src"); }),
            ErrorKind::kAuth);
  EXPECT_EQ(kind_of([] { parse_credentials_json(R"({"Code": 5})", "src"); }), ErrorKind::kAuth);
  EXPECT_EQ(kind_of([] { parse_credentials_json("[1,2]", "src"); }), ErrorKind::kAuth);
  EXPECT_EQ(kind_of([] { parse_credentials_json(R"({"AccessKeyId":"a","SecretAccessKey":"s","Expiration":"soon"})", "src"); }),
            ErrorKind::kAuth);
  AwsCredentials c = parse_credentials_json(R"({"AccessKeyId":"a","SecretAccessKey":"s","Token":"t"})", "src");
  EXPECT_EQ(c.session_token, "t");
  EXPECT_FALSE(c.expiration);
}

}  // namespace etcdadm

// What S3, STS and GCS answer, read by the pure parsers of store/backend/s3/aws_responses.h and
// store/backend/gcs/gcs_responses.h: known answers, and the hostile or broken ones each refused with
// etcdadm::Error (never a std:: exception, a wrapped-around number or an endless listing).
#include <gtest/gtest.h>

#include "common/error.h"
#include "store/backend/s3/aws_responses.h"
#include "store/blob_store.h"
#include "store/backend/gcs/gcs_responses.h"
#include "store/backend/object/oauth_token.h"

namespace etcdadm {
namespace {

ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no Error thrown";
  return ErrorKind::kInternal;
}

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

TEST(GcsResponses, ObjectsAndListingsKnownAnswer) {
  GcsListPage p = parse_gcs_list_page(
      R"({"nextPageToken":"n","items":[{"name":"a","size":"881","generation":"7","updated":"2026-11-24T16:37:35Z"},{"name":"b","size":131,"generation":8}]})",
      "t");
  ASSERT_EQ(p.objects.size(), 2u);
  EXPECT_EQ(p.objects[0].size, 881u);
  EXPECT_EQ(p.objects[0].generation, "7");
  EXPECT_EQ(p.objects[1].size, 131u);
  EXPECT_EQ(p.objects[1].generation, "8");
  EXPECT_EQ(p.next_page_token, "n");
  EXPECT_TRUE(parse_gcs_list_page("{}", "t").objects.empty());
}

// What keeps an object from deletion, as the JSON API's object resource says it (a bucket
// retention policy's expiry, temporary and event-based holds); absent fields mean no lock.
TEST(GcsResponses, RetentionAndHoldsKnownAnswer) {
  GcsObjectInfo o = parse_gcs_object(
      R"({"name":"b/x","size":"3","updated":"2026-11-26T10:00:00Z","generation":"7",)"
      R"("retentionExpirationTime":"2026-12-03T10:00:00.5Z","temporaryHold":true,"eventBasedHold":false})",
      "t");
  EXPECT_EQ(o.retention_expires_micros, 1796292000500000);
  EXPECT_TRUE(o.temporary_hold);
  EXPECT_FALSE(o.event_based_hold);
  GcsObjectInfo plain = parse_gcs_object(R"({"name":"b/y","size":"1","eventBasedHold":"yes"})", "t");
  EXPECT_EQ(plain.retention_expires_micros, 0);
  EXPECT_FALSE(plain.temporary_hold);
  EXPECT_FALSE(plain.event_based_hold);  // not a JSON boolean: not a hold
}

TEST(GcsResponses, HostileListingsAreCorrupt) {
  for (const char* bad : {R"({"items":{"name":"a"}})", R"({"items":[5]})", R"({"items":[{"name":"a","size":"-5"}]})",
                          R"({"items":[{"name":"a","size":"x"}]})", R"({"items":[{"name":"a","size":-5}]})", "[]", "nul"}) {
    EXPECT_EQ(kind_of([&] { parse_gcs_list_page(bad, "t"); }), ErrorKind::kCorrupt) << bad;
  }
}

TEST(GcsResponses, SessionRangesAndTokens) {
  EXPECT_EQ(parse_persisted_range("bytes=0-8388607", "t"), 8388608u);
  EXPECT_EQ(parse_persisted_range("", "t"), 0u);
  for (const char* bad : {"bytes=0-x", "bytes=5-9", "bytes=0-18446744073709551615", "0-9", "bytes=0--1"}) {
    EXPECT_EQ(kind_of([&] { parse_persisted_range(bad, "t"); }), ErrorKind::kCorrupt) << bad;
  }
  EXPECT_EQ(parse_oauth_token_answer(200, R"({"access_token":"a","expires_in":3599})", "t").expires_in.count(), 3599);
  EXPECT_EQ(parse_oauth_token_answer(200, R"({"access_token":"a","expires_in":-7})", "t").expires_in.count(), 0);
  EXPECT_EQ(parse_oauth_token_answer(200, R"({"access_token":"a","expires_in":1e300})", "t").expires_in.count(), 86400);
  EXPECT_EQ(parse_oauth_token_answer(200, R"({"access_token":"a","expires_in":"soon"})", "t").expires_in.count(), 3600);
  EXPECT_EQ(parse_oauth_token_answer(200, R"({"access_token":"a","expires_in":"3599"})", "t").expires_in.count(), 3599);  // Azure IMDS
  EXPECT_EQ(kind_of([] { parse_oauth_token_answer(200, R"({"access_token":["a"]})", "t"); }), ErrorKind::kAuth);
  EXPECT_EQ(kind_of([] { parse_oauth_token_answer(401, R"({"error":7,"error_description":["x"]})", "t"); }), ErrorKind::kAuth);
  GcsErrorBody e = parse_gcs_error_body(R"({"error":{"message":5,"errors":[7]}})");
  EXPECT_EQ(e.message, "5");
  EXPECT_EQ(e.reason, "");
}

TEST(ObjectKeysListing, ForeignKeysAreSkippedAndARepeatedTokenEndsTheListing) {
  ObjectKeys keys{"prod/etcd"};
  int pages = 0;
  auto out = keys.list("", [&](const std::string& prefix, const std::string& token, std::vector<BlobInfo>& objects) {
    EXPECT_EQ(prefix, "prod/etcd/");
    objects.push_back({"prod/etcd/a/etcd.backup.gz", 1, 0});
    objects.push_back({"elsewhere/b/etcd.backup.gz", 2, 0});  // not under the prefix asked for
    objects.push_back({"prod/etcdX/c", 3, 0});
    return ++pages < 3 ? "t" + std::to_string(pages) : std::string();
  });
  ASSERT_EQ(out.size(), 3u);  // one real key per page
  EXPECT_EQ(out[0].key, "a/etcd.backup.gz");

  int calls = 0;
  EXPECT_EQ(kind_of([&] {
              keys.list("", [&](const std::string&, const std::string&, std::vector<BlobInfo>&) {
                ++calls;
                return std::string("same-token");
              });
            }),
            ErrorKind::kCorrupt);
  EXPECT_EQ(calls, 2);
}

}  // namespace etcdadm

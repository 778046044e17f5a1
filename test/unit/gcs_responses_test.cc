// Tests of store/backend/gcs/gcs_responses.{h,cc}: what GCS and its token endpoints answer, read by
// pure parsers: known answers, and the hostile or broken ones each refused with etcdadm::Error.
#include "store/backend/gcs/gcs_responses.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "store/backend/object/oauth_token.h"
#include "test/support/error_of.h"

namespace etcdadm {
namespace {

using test::kind_of;

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

}  // namespace
}  // namespace etcdadm

// Tests of store/backend/azure/azure_responses.{h,cc}: the parsers of what Azure answers, and the
// block ids and block lists sent to it.
#include "store/backend/azure/azure_responses.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/timefmt.h"

namespace etcdadm {
namespace {

TEST(AzureResponses, ListingErrorsAndBlockIds) {
  auto page = parse_azure_list_blobs(
      R"(<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://x/" ContainerName="c">)"
      R"(<Prefix>backups/</Prefix><Blobs><Blob><Name>backups/a b</Name><Properties>)"
      R"(<Last-Modified>Wed, 25 Nov 2026 05:30:00 GMT</Last-Modified><Etag>0x8DC</Etag><Content-Length>1234</Content-Length>)"
      R"(</Properties></Blob></Blobs><NextMarker>2!84!abc</NextMarker></EnumerationResults>)",
      "t");
  ASSERT_EQ(page.blobs.size(), 1u);
  EXPECT_EQ(page.blobs[0].name, "backups/a b");
  EXPECT_EQ(page.blobs[0].size, 1234u);
  EXPECT_EQ(page.blobs[0].etag, "0x8DC");
  EXPECT_EQ(page.blobs[0].modified_unix_micros, to_unix_micros(*parse_http_date("Wed, 25 Nov 2026 05:30:00 GMT")));
  EXPECT_EQ(page.next_marker, "2!84!abc");
  EXPECT_THROW(parse_azure_list_blobs("<EnumerationResults><Blobs><Blob><Name>x</Name><Properties><Content-Length>-1"
                                      "</Content-Length></Properties></Blob></Blobs></EnumerationResults>",
                                      "t"),
               Error);
  EXPECT_THROW(parse_azure_list_blobs("<ListBucketResult/>", "t"), Error);
  EXPECT_THROW(parse_azure_list_blobs("not xml", "t"), Error);

  auto e = parse_azure_error_body(R"(<?xml version="1.0"?><Error><Code>AuthenticationFailed</Code><Message>Server failed )"
                                  "to authenticate the request.\nRequestId:1\nTime:2</Message></Error>");
  EXPECT_EQ(e.code, "AuthenticationFailed");
  EXPECT_EQ(e.message, "Server failed to authenticate the request.");
  EXPECT_EQ(parse_azure_error_body("plain").message, "plain");

  EXPECT_EQ(azure_block_id(1), "MDAwMDAwMDAwMQ==");
  EXPECT_EQ(azure_block_id(50000).size(), azure_block_id(1).size());
  EXPECT_EQ(azure_block_list_xml({"QQ==", "Qg=="}),
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList><Latest>QQ==</Latest><Latest>Qg==</Latest></BlockList>");
}

}  // namespace
}  // namespace etcdadm

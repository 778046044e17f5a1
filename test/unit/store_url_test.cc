// Tests of store/store_url.{h,cc}: the forms of a store URL and the hints for mistyped ones.
#include "store/store_url.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/fs.h"

namespace etcdadm {

TEST(StoreUrl, Forms) {
  EXPECT_EQ(parse_store_url("/var/backups/etcd/").canonical(), "file:///var/backups/etcd");
  EXPECT_EQ(parse_store_url("file:///var/backups/etcd").canonical(), "file:///var/backups/etcd");
  auto s3 = parse_store_url("s3://bucket/cluster/backups/etcd/main/");
  EXPECT_EQ(s3.bucket, "bucket");
  EXPECT_EQ(s3.prefix, "cluster/backups/etcd/main");
  EXPECT_EQ(parse_store_url("gs://b").canonical(), "gs://b");
  EXPECT_THROW(parse_store_url("ftp://x/y"), Error);
  EXPECT_THROW(parse_store_url("s3:///nobucket"), Error);
  EXPECT_THROW(parse_store_url("file://relative"), Error);
  EXPECT_THROW(parse_store_url(""), Error);
}

// A mistyped scheme or a bare relative path must be refused (never a directory under the working
// directory), with the URL that was probably meant in the hint.
TEST(StoreUrl, MistypedSchemesAndBareRelativePathsAreRefused) {
  auto hint_of = [](const std::string& url) {
    try {
      parse_store_url(url);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << url;
      return std::string(e.what()) + " | " + e.hint();
    }
    ADD_FAILURE() << url << " was accepted";
    return std::string();
  };
  EXPECT_NE(hint_of("s3:/my-bucket/etcd").find("did you mean s3://my-bucket/etcd?"), std::string::npos) << hint_of("s3:/my-bucket/etcd");
  EXPECT_NE(hint_of("s3//my-bucket/etcd").find("did you mean s3://my-bucket/etcd?"), std::string::npos) << hint_of("s3//my-bucket/etcd");
  EXPECT_NE(hint_of("s3:my-bucket/etcd").find("did you mean s3://my-bucket/etcd?"), std::string::npos) << hint_of("s3:my-bucket/etcd");
  EXPECT_NE(hint_of("S3://my-bucket/etcd").find("did you mean s3://my-bucket/etcd?"), std::string::npos) << hint_of("S3://my-bucket/etcd");
  EXPECT_NE(hint_of("gcs://b/p").find("did you mean gs://b/p?"), std::string::npos) << hint_of("gcs://b/p");
  EXPECT_NE(hint_of("gs:/b/p").find("did you mean gs://b/p?"), std::string::npos) << hint_of("gs:/b/p");
  EXPECT_NE(hint_of("file:/var/backups").find("did you mean file:///var/backups?"), std::string::npos) << hint_of("file:/var/backups");
  EXPECT_NE(hint_of("ftp://x/y").find("unsupported scheme"), std::string::npos) << hint_of("ftp://x/y");
  EXPECT_NE(hint_of("backups/etcd").find("write ./backups/etcd"), std::string::npos) << hint_of("backups/etcd");
  // Explicitly relative paths are fine and become absolute.
  EXPECT_EQ(parse_store_url("./backups").canonical(), "file://" + absolute_path("backups"));
  EXPECT_EQ(parse_store_url("../backups").canonical(), "file://" + absolute_path("../backups"));
}

}  // namespace etcdadm

// Tests of store/backend/s3/s3_store.{h,cc}: the S3 configuration (endpoint, region, addressing)
// and the part sizes of an upload.
#include "store/backend/s3/s3_store.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/error.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

using Env = std::map<std::string, std::string>;

// test::fake_environment, by the name these tests use.
Environment env_of(Env vars) { return test::fake_environment(std::move(vars)); }

TEST(S3Config, EndpointRegionAndAddressingResolution) {
  Env e;
  S3Config aws = resolve_s3_config(S3Settings{}, env_of(e));
  EXPECT_EQ(aws.endpoint, "");
  EXPECT_EQ(aws.region, "us-east-1");
  EXPECT_FALSE(aws.path_style);
  e["S3_ENDPOINT"] = "http://127.0.0.1:9000";
  e["S3_REGION"] = "minio-1";
  e["AWS_REGION"] = "eu-central-1";
  S3Config compat = resolve_s3_config(S3Settings{}, env_of(e));
  EXPECT_EQ(compat.endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(compat.region, "minio-1");
  EXPECT_TRUE(compat.path_style);
  S3Settings flags;
  flags.endpoint = "s3.example.com";
  flags.addressing = "virtual";
  S3Config f = resolve_s3_config(flags, env_of(e));
  EXPECT_EQ(f.endpoint, "https://s3.example.com");
  EXPECT_FALSE(f.path_style);
  flags.sse = "aws:kms";
  flags.sse_kms_key_id = "key-1";
  EXPECT_EQ(resolve_s3_config(flags, env_of(e)).sse_kms_key_id, "key-1");
  flags.sse = "";
  EXPECT_THROW(resolve_s3_config(flags, env_of(e)), Error);
}

TEST(S3Config, PartSizeGrowsSoHugeObjectsFitInTenThousandParts) {
  EXPECT_EQ(s3_part_size(8u << 20, 1), 8u << 20);
  EXPECT_EQ(s3_part_size(8u << 20, 1000), 8u << 20);
  EXPECT_EQ(s3_part_size(8u << 20, 1001), 16u << 20);
  EXPECT_EQ(s3_part_size(8u << 20, 2001), 32u << 20);
  uint64_t total = 0;
  int parts = 0;
  while (total < (uint64_t{100} << 30)) total += s3_part_size(8u << 20, ++parts);
  EXPECT_LT(parts, 10000);
  EXPECT_LE(parts, 4000);
}

}  // namespace
}  // namespace etcdadm

// Known-answer vectors for small encodings shared across layers.
#include <gtest/gtest.h>

#include "common/base64.h"
#include "etcd/datadir/snapshot_inspect.h"

namespace etcdadm {
namespace {

TEST(Base64, Rfc4648Vectors) {
  // RFC 4648 section 10.
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foob"), "Zm9vYg==");
  EXPECT_EQ(base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64(std::string("\0\xff", 2)), "AP8=");
}

TEST(Base64, UrlAlphabetWithoutPadding) {
  EXPECT_EQ(base64url("\xfb\xff"), "-_8");  // base64 "+/8="
  EXPECT_EQ(base64url("foob"), "Zm9vYg");
  // RFC 7515 appendix A.1: the JOSE header of the HS256 example.
  EXPECT_EQ(base64url("{\"typ\":\"JWT\",\r\n \"alg\":\"HS256\"}"), "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9");
}

TEST(PrefixRange, MatchesEtcdWithPrefix) {
  const std::string nul(1, '\0');
  auto r = prefix_range("/registry/");
  EXPECT_EQ(r.key, "/registry/");
  EXPECT_EQ(r.range_end, "/registry0");
  r = prefix_range("a\xff");
  EXPECT_EQ(r.range_end, "b");  // trailing 0xff bytes are dropped before the increment
  r = prefix_range("\xff\xff");
  EXPECT_EQ(r.range_end, nul);  // no upper bound
  r = prefix_range("");
  EXPECT_EQ(r.key, nul);  // every key
  EXPECT_EQ(r.range_end, nul);
}

}  // namespace
}  // namespace etcdadm

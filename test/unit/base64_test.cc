// Tests of common/base64.{h,cc}: known-answer vectors for base64 and base64url.
#include "common/base64.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace etcdadm

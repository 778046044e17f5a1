// Tests of common/sha256.{h,cc}.
#include "common/sha256.h"

#include <gtest/gtest.h>

namespace etcdadm {

// Known answer: SHA-256("abc") from FIPS 180-2.
TEST(Sha256, KnownAnswer) {
  EXPECT_EQ(to_hex(sha256_of("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace etcdadm

// CRC-32C known answers (RFC 3720 B.4 and the classic check value), and against a bit-at-a-time
// reference at every alignment and length around ISA-L's block sizes.
#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>

namespace etcdadm {
namespace {

TEST(Crc32c, KnownAnswers) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string inc;
  for (int i = 0; i < 32; ++i) inc.push_back(static_cast<char>(i));
  EXPECT_EQ(crc32c(inc), 0x46DD794Eu);
}

// The definition itself, one bit at a time: slow and obviously right.
uint32_t reference_crc32c(uint32_t crc, const std::string_view data) {
  crc = ~crc;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

TEST(Crc32c, MatchesTheReferenceAndStreamingEqualsOneShot) {
  std::mt19937_64 rng(3);
  std::string buf(3 * 8192 * 2 + 3 * 256 * 3 + 64, '\0');
  for (char& c : buf) c = static_cast<char>(rng());
  for (size_t len : {size_t{0}, size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{65}, size_t{767}, size_t{768},
                     size_t{3 * 8192 + 768 + 13}, buf.size() - 8}) {
    for (size_t off : {size_t{0}, size_t{1}, size_t{5}}) {
      uint32_t seed = static_cast<uint32_t>(rng());
      std::string_view part(buf.data() + off, len);
      EXPECT_EQ(crc32c_update(seed, part), reference_crc32c(seed, part)) << "len " << len << " off " << off;
    }
  }
  const std::string_view data(buf.data(), 1000);
  const uint32_t one = crc32c(data);
  for (size_t split : {0u, 1u, 7u, 8u, 9u, 500u, 999u}) {
    Crc32c c;
    c.update(data.substr(0, split));
    c.update(data.substr(split));
    EXPECT_EQ(c.value(), one) << split;
  }
}

}  // namespace
}  // namespace etcdadm

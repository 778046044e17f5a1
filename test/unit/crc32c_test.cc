// CRC-32C known answers (RFC 3720 B.4 and the classic check value), both implementations.
#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <string>

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

TEST(Crc32c, PortableMatchesAndStreamingEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  uint32_t one = crc32c(data);
  EXPECT_EQ(crc32c_update_portable(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c_update_portable(0, data.data(), data.size()), one);
  for (size_t split : {0u, 1u, 7u, 8u, 9u, 500u, 999u}) {
    Crc32c c;
    c.update(std::string_view(data).substr(0, split));
    c.update(std::string_view(data).substr(split));
    EXPECT_EQ(c.value(), one) << split;
    EXPECT_EQ(
        crc32c_update_portable(crc32c_update_portable(0, data.data(), split), data.data() + split, data.size() - split),
        one)
        << split;
  }
}

}  // namespace
}  // namespace etcdadm

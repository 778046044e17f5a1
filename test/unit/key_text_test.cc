// The printed form of keys (common/key_text.h): known answers both ways, and every byte string
// reads back as itself.
#include <gtest/gtest.h>

#include <random>

#include "common/key_text.h"

namespace etcdadm {
namespace {

TEST(KeyText, KnownAnswers) {
  EXPECT_EQ(printable_bytes("/registry/pods/default/web-0"), "/registry/pods/default/web-0");
  // UTF-8 as it is: "名前" and "ü"; a NUL, a tab, DEL and a lone continuation byte escaped.
  EXPECT_EQ(printable_bytes("/k/\xe5\x90\x8d\xe5\x89\x8d/\xc3\xbc"), "/k/\xe5\x90\x8d\xe5\x89\x8d/\xc3\xbc");
  EXPECT_EQ(printable_bytes(std::string("/bin/\x00\x01\t\x7f\x80", 10)), "/bin/\\x00\\x01\\x09\\x7f\\x80");
  EXPECT_EQ(printable_bytes("a\\b"), "a\\\\b");
  // Not UTF-8: overlong "/" (C0 AF), a surrogate (ED A0 80), past U+10FFFF (F4 90 80 80), a C1
  // control (C2 85), a cut sequence (E5 90 at the end).
  EXPECT_EQ(printable_bytes("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(printable_bytes("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(printable_bytes("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(printable_bytes("\xc2\x85"), "\\xc2\\x85");
  EXPECT_EQ(printable_bytes("x\xe5\x90"), "x\\xe5\\x90");
  EXPECT_EQ(printable_bytes("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");  // U+1F600
  EXPECT_EQ(printable_bytes("abcdef", 3), "abc...");

  EXPECT_EQ(parse_printed_bytes("/bin/\\x00\\x01"), std::string("/bin/\x00\x01", 7));
  EXPECT_EQ(parse_printed_bytes("\\xC3\\xbc"), "\xc3\xbc");
  EXPECT_EQ(parse_printed_bytes("a\\\\b"), "a\\b");
  // A backslash that starts neither sequence is itself: keys typed as they are keep working.
  EXPECT_EQ(parse_printed_bytes("a\\b\\x4"), "a\\b\\x4");
  EXPECT_EQ(parse_printed_bytes("\\xzz"), "\\xzz");
}

TEST(KeyText, EveryByteStringReadsBackAsItself) {
  std::mt19937 rng(36);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 12, '\0');
    for (char& c : bytes) {
      // Mostly the bytes that matter: backslash, 'x', hex digits, UTF-8 lead and continuation bytes.
      static const unsigned char kPool[] = {'\\', 'x', '0', 'a', 'F', '/', 0x00, 0x7f, 0x80, 0xbf, 0xc2, 0xc3, 0xe0,
                                            0xe5, 0xed, 0xf0, 0xf4, 0xff};
      c = static_cast<char>(rng() % 3 == 0 ? rng() % 256 : kPool[rng() % sizeof kPool]);
    }
    ASSERT_EQ(parse_printed_bytes(printable_bytes(bytes)), bytes) << printable_bytes(bytes);
  }
}

}  // namespace
}  // namespace etcdadm

#include "common/key_text.h"

#include <cstdio>

namespace etcdadm {

namespace {

// The length of the valid UTF-8 sequence for a character of U+00A0 or above that starts at `i`
// (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), or 0. U+0080..U+009F are
// control characters and count as invalid here, so that they print escaped.
size_t printable_utf8_length(const std::string& s, size_t i) {
  auto byte = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  auto continuation = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) { return byte(k) >= lo && byte(k) <= hi; };
  unsigned c = byte(i);
  if (c == 0xc2) return continuation(i + 1, 0xa0) ? 2 : 0;
  if (c >= 0xc3 && c <= 0xdf) return continuation(i + 1) ? 2 : 0;
  if (c == 0xe0) return continuation(i + 1, 0xa0) && continuation(i + 2) ? 3 : 0;
  if (c == 0xed) return continuation(i + 1, 0x80, 0x9f) && continuation(i + 2) ? 3 : 0;
  if (c >= 0xe1 && c <= 0xef) return continuation(i + 1) && continuation(i + 2) ? 3 : 0;
  if (c == 0xf0) return continuation(i + 1, 0x90) && continuation(i + 2) && continuation(i + 3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return continuation(i + 1) && continuation(i + 2) && continuation(i + 3) ? 4 : 0;
  if (c == 0xf4) return continuation(i + 1, 0x80, 0x8f) && continuation(i + 2) && continuation(i + 3) ? 4 : 0;
  return 0;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string printable_bytes(const std::string& bytes, size_t max) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (size_t n = printable_utf8_length(bytes, i); n > 0) {
      out.append(bytes, i, n);
      i += n;
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    }
  }
  return out;
}

std::string parse_printed_bytes(const std::string& typed) {
  std::string out;
  for (size_t i = 0; i < typed.size(); ++i) {
    if (typed[i] == '\\' && i + 1 < typed.size() && typed[i + 1] == '\\') {
      out.push_back('\\');
      ++i;
    } else if (typed[i] == '\\' && i + 3 < typed.size() && typed[i + 1] == 'x' && hex_value(typed[i + 2]) >= 0 &&
               hex_value(typed[i + 3]) >= 0) {
      out.push_back(static_cast<char>(hex_value(typed[i + 2]) * 16 + hex_value(typed[i + 3])));
      i += 3;
    } else {
      out.push_back(typed[i]);
    }
  }
  return out;
}

}  // namespace etcdadm

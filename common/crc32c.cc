#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace etcdadm {

namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

uint32_t update_table(uint32_t crc, const uint8_t* p, size_t n) {
  const auto& t = tables().t;
  while (n >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;  // little-endian hosts only (the project targets amd64/arm64)
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][hi & 0xFF] ^
          t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = t[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// Three independent crc32 streams over adjacent blocks hide the instruction's 3-cycle latency; the
// partial CRCs are then joined by "appending zeros" to the earlier ones with precomputed GF(2)
// operator tables (Mark Adler's crc32c.c method).
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;

uint32_t gf2_times(const uint32_t* mat, uint32_t vec) {
  uint32_t sum = 0;
  for (; vec != 0; vec >>= 1, ++mat) {
    if (vec & 1) sum ^= *mat;
  }
  return sum;
}

void gf2_square(uint32_t* square, const uint32_t* mat) {
  for (int n = 0; n < 32; ++n) square[n] = gf2_times(mat, mat[n]);
}

// Tables that apply `len` zero bytes (a power of two) to a raw CRC, one table per CRC byte.
struct ShiftTables {
  std::array<std::array<uint32_t, 256>, 4> t{};
  explicit ShiftTables(size_t len) {
    uint32_t even[32];
    uint32_t odd[32];
    odd[0] = kPoly;  // the operator for one zero bit
    uint32_t row = 1;
    for (int n = 1; n < 32; ++n) {
      odd[n] = row;
      row <<= 1;
    }
    gf2_square(even, odd);  // two zero bits
    gf2_square(odd, even);  // four
    const uint32_t* op = nullptr;
    for (;;) {
      gf2_square(even, odd);  // 8, 32, ... bits
      len >>= 1;
      if (len == 0) {
        op = even;
        break;
      }
      gf2_square(odd, even);
      len >>= 1;
      if (len == 0) {
        op = odd;
        break;
      }
    }
    for (uint32_t n = 0; n < 256; ++n) {
      t[0][n] = gf2_times(op, n);
      t[1][n] = gf2_times(op, n << 8);
      t[2][n] = gf2_times(op, n << 16);
      t[3][n] = gf2_times(op, n << 24);
    }
  }
  uint32_t shift(uint32_t crc) const {
    return t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF] ^ t[3][crc >> 24];
  }
};

const ShiftTables& long_shift() {
  static const ShiftTables t(kLongBlock);
  return t;
}

const ShiftTables& short_shift() {
  static const ShiftTables t(kShortBlock);
  return t;
}

template <size_t kBlock>
__attribute__((target("sse4.2"))) inline uint64_t three_way(uint64_t c0, const uint8_t*& p, size_t& n,
                                                            const ShiftTables& shift) {
  while (n >= 3 * kBlock) {
    uint64_t c1 = 0;
    uint64_t c2 = 0;
    const uint8_t* end = p + kBlock;
    do {
      uint64_t a, b, c;
      std::memcpy(&a, p, 8);
      std::memcpy(&b, p + kBlock, 8);
      std::memcpy(&c, p + 2 * kBlock, 8);
      c0 = _mm_crc32_u64(c0, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, c);
      p += 8;
    } while (p < end);
    c0 = shift.shift(static_cast<uint32_t>(c0)) ^ c1;
    c0 = shift.shift(static_cast<uint32_t>(c0)) ^ c2;
    p += 2 * kBlock;
    n -= 3 * kBlock;
  }
  return c0;
}

__attribute__((target("sse4.2"))) uint32_t update_sse42(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  if (n >= 3 * kShortBlock) {
    c = three_way<kLongBlock>(c, p, n, long_shift());
    c = three_way<kShortBlock>(c, p, n, short_shift());
  }
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool have_sse42() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_SSE4_2) != 0;
}
#endif

}  // namespace

uint32_t crc32c_update(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  static const bool sse = have_sse42();
  crc = sse ? update_sse42(crc, p, size) : update_table(crc, p, size);
#else
  crc = update_table(crc, p, size);
#endif
  return ~crc;
}

uint32_t crc32c_update_portable(uint32_t crc, const void* data, size_t size) {
  return ~update_table(~crc, static_cast<const uint8_t*>(data), size);
}

}  // namespace etcdadm

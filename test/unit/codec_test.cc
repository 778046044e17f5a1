// Tests of store/codec.{h,cc}: gzip, zstd and no compression, streamed in any chunking.
#include "store/codec.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "test/support/sample_data.h"
#include "test/support/test_env.h"

namespace etcdadm {

namespace {

using test::sample;

std::string encode(Compression c, const std::string& in, size_t chunk = 65536) {
  StringSink out;
  auto enc = make_encoder(c, -1, out);
  for (size_t off = 0; off < in.size(); off += chunk) {
    enc->write(reinterpret_cast<const uint8_t*>(in.data() + off), std::min(chunk, in.size() - off));
  }
  enc->finish();
  return out.out;
}

std::string decode(Compression c, const std::string& in, size_t chunk = 65536) {
  StringSink out;
  auto dec = make_decoder(c, out);
  for (size_t off = 0; off < in.size(); off += chunk) {
    dec->write(reinterpret_cast<const uint8_t*>(in.data() + off), std::min(chunk, in.size() - off));
  }
  dec->finish();
  return out.out;
}

}  // namespace

TEST(Codec, RoundTripsInAnyChunking) {
  std::string in = sample(3 * 1024 * 1024 + 17);
  for (Compression c : {Compression::kGzip, Compression::kZstd, Compression::kNone}) {
    std::string enc = encode(c, in);
    if (c != Compression::kNone) {
      EXPECT_LT(enc.size(), in.size() / 2) << compression_name(c);
    }
    for (size_t chunk : {1ul << 20, 4097ul, 13ul}) {
      if (chunk == 13 && enc.size() > 400000) continue;  // keep it quick
      EXPECT_EQ(decode(c, enc, chunk), in) << compression_name(c) << " chunk " << chunk;
    }
  }
}

TEST(Codec, EmptyInput) {
  for (Compression c : {Compression::kGzip, Compression::kZstd}) EXPECT_EQ(decode(c, encode(c, "")), "");
}

TEST(Codec, GzipIsStandardGzip) {
  // Interop oracle: the system gzip must read what we write, and we must read what it writes.
  test::TempDir dir;
  std::string in = sample(500000);
  write_file_atomic(dir / "a.gz", encode(Compression::kGzip, in));
  auto r = run_process({"gzip", "-t", dir / "a.gz"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  write_file_atomic(dir / "b", in);
  ASSERT_EQ(run_process({"gzip", "-9", dir / "b"}).exit_code, 0);
  EXPECT_EQ(decode(Compression::kGzip, read_file(dir / "b.gz")), in);
}

TEST(Codec, GzipMultiMember) {
  std::string a = sample(100000), b = sample(70000) + "tail";
  EXPECT_EQ(decode(Compression::kGzip, encode(Compression::kGzip, a) + encode(Compression::kGzip, b), 999), a + b);
}

TEST(Codec, DetectsDamage) {
  std::string in = sample(300000);
  for (Compression c : {Compression::kGzip, Compression::kZstd}) {
    std::string enc = encode(c, in);
    EXPECT_THROW(decode(c, enc.substr(0, enc.size() / 2)), Error) << "truncated " << compression_name(c);
    EXPECT_THROW(decode(c, enc.substr(0, enc.size() - 3)), Error) << "trailer cut " << compression_name(c);
    std::string flipped = enc;
    flipped[enc.size() / 2] ^= 0x40;
    EXPECT_THROW(decode(c, flipped), Error) << "flipped " << compression_name(c);
  }
  EXPECT_THROW(decode(Compression::kGzip, "not gzip at all"), Error);
}

TEST(Codec, DetectFromMagic) {
  std::string gz = encode(Compression::kGzip, "x"), zs = encode(Compression::kZstd, "x");
  EXPECT_EQ(detect_compression(reinterpret_cast<const uint8_t*>(gz.data()), gz.size()), Compression::kGzip);
  EXPECT_EQ(detect_compression(reinterpret_cast<const uint8_t*>(zs.data()), zs.size()), Compression::kZstd);
  EXPECT_EQ(detect_compression(reinterpret_cast<const uint8_t*>("\xed\xda"), 2), Compression::kNone);
}

}  // namespace etcdadm

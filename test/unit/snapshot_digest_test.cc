// Tests of store/snapshot_digest.{h,cc}: the check of a snapshot's SHA-256 trailer as it streams by.
#include "store/snapshot_digest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/sha256.h"

namespace etcdadm {

static std::string fake_snapshot(size_t pages, bool with_trailer) {
  std::string db(pages * 4096, '\0');
  for (size_t i = 0; i < db.size(); ++i) db[i] = static_cast<char>((i * 7) % 251);
  const unsigned char magic[4] = {0xed, 0xda, 0x0c, 0xed};
  std::memcpy(&db[16], magic, 4);
  if (with_trailer) {
    auto d = sha256_of(db.data(), db.size());
    db.append(reinterpret_cast<const char*>(d.data()), d.size());
  }
  return db;
}

TEST(SnapshotDigest, AcceptsIntactInAnyChunking) {
  std::string snap = fake_snapshot(5, true);
  for (size_t chunk : {1ul, 7ul, 31ul, 32ul, 33ul, 4096ul, snap.size()}) {
    SnapshotDigestSink sink(nullptr);
    for (size_t off = 0; off < snap.size(); off += chunk) {
      size_t n = std::min(chunk, snap.size() - off);
      sink.write(reinterpret_cast<const uint8_t*>(snap.data() + off), n);
    }
    auto d = sink.finish();
    EXPECT_TRUE(d.has_trailer) << chunk;
    EXPECT_TRUE(d.trailer_matches) << chunk;
    EXPECT_EQ(d.db_bytes, 5u * 4096) << chunk;
    EXPECT_NO_THROW(require_intact_snapshot(d, "x", false));
  }
}

TEST(SnapshotDigest, RejectsFlippedTruncatedAndTrailerless) {
  std::string snap = fake_snapshot(3, true);
  auto digest_of = [](const std::string& s) {
    SnapshotDigestSink sink(nullptr);
    sink.write(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    return sink.finish();
  };
  std::string flipped = snap;
  flipped[5000] ^= 1;
  EXPECT_THROW(require_intact_snapshot(digest_of(flipped), "x", false), Error);
  EXPECT_THROW(require_intact_snapshot(digest_of(snap.substr(0, snap.size() - 100)), "x", false), Error);
  std::string bare = fake_snapshot(3, false);
  EXPECT_THROW(require_intact_snapshot(digest_of(bare), "x", false), Error);
  EXPECT_NO_THROW(require_intact_snapshot(digest_of(bare), "x", true));
  std::string not_bolt = snap;
  not_bolt[16] = 0;
  EXPECT_THROW(require_intact_snapshot(digest_of(not_bolt), "x", false), Error);
}

}  // namespace etcdadm

// bbolt's on-disk format, the parts both the reader (bolt_reader) and the copy-on-write writer
// (bolt_writer) need. From go.etcd.io/bbolt (page.go, node.go, db.go), identical in every version
// etcd 3.4-3.7 ships (bbolt 1.3.x and 1.4.x; file format version 2). Integers are native endian;
// etcadm builds for little-endian machines only, as bbolt files from them are little endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace etcdadm::bolt {

constexpr uint16_t kBranchFlag = 0x01;
constexpr uint16_t kLeafFlag = 0x02;
constexpr uint16_t kMetaFlag = 0x04;
constexpr uint32_t kBucketLeafFlag = 0x01;  // a leaf element whose value is a nested bucket
constexpr uint32_t kMagic = 0xED0CDAED;
constexpr uint32_t kVersion = 2;
constexpr size_t kPageHeaderSize = 16;  // id u64, flags u16, count u16, overflow u32
constexpr size_t kElementSize = 16;     // branch {pos, ksize, pgid}, leaf {flags, pos, ksize, vsize}
constexpr size_t kMetaBodySize = 64;    // magic .. checksum
constexpr size_t kMetaEnd = kPageHeaderSize + kMetaBodySize;
constexpr size_t kBucketHeaderSize = 16;  // root pgid u64, sequence u64
// meta.freelist when the freelist is not written (bbolt's NoFreelistSync, which etcd uses): an
// opening bbolt rebuilds the free list from the pages the tree does not reach.
constexpr uint64_t kNoFreelist = 0xFFFFFFFFFFFFFFFFULL;
constexpr uint32_t kMinPageSize = 512;
constexpr int kMaxDepth = 64;  // deeper trees are refused as damage (a real one is a handful of levels)
constexpr uint32_t kMaxPageSize = 65536;

// Offsets inside the meta body (which starts kPageHeaderSize into page 0 or 1).
constexpr size_t kMetaMagic = 0, kMetaVersion = 4, kMetaPageSize = 8, kMetaFlags = 12, kMetaRoot = 16,
                 kMetaRootSequence = 24, kMetaFreelist = 32, kMetaHighWater = 40, kMetaTxid = 48, kMetaChecksum = 56;

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// The meta page checksum: FNV-1a 64 over the 56 body bytes before it.
inline uint64_t fnv1a64(const char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace etcdadm::bolt

#include "store/snapshot_digest.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace etcdadm {

void SnapshotDigestSink::write(const uint8_t* data, size_t size) {
  if (size == 0) return;
  if (head_len_ < head_.size()) {
    size_t n = std::min(head_.size() - head_len_, size);
    std::memcpy(head_.data() + head_len_, data, n);
    head_len_ += n;
  }
  total_ += size;
  if (size >= tail_.size()) {
    // Everything held back so far is db data; hold back the new last 32 bytes.
    hash_.update(tail_.data(), tail_len_);
    hash_.update(data, size - tail_.size());
    std::memcpy(tail_.data(), data + size - tail_.size(), tail_.size());
    tail_len_ = tail_.size();
  } else {
    size_t keep = std::min(tail_.size() - size, tail_len_);  // old tail bytes still within the last 32
    size_t release = tail_len_ - keep;
    hash_.update(tail_.data(), release);
    std::memmove(tail_.data(), tail_.data() + release, keep);
    std::memcpy(tail_.data() + keep, data, size);
    tail_len_ = keep + size;
  }
  if (next_ != nullptr) next_->write(data, size);
}

SnapshotDigest SnapshotDigestSink::finish() {
  SnapshotDigest d;
  d.total_bytes = total_;
  // bbolt meta page: page header is 16 bytes, then magic 0xED0CDAED (little endian on disk).
  static const uint8_t kMagic[4] = {0xed, 0xda, 0x0c, 0xed};
  d.bbolt_magic_ok = head_len_ >= 20 && std::memcmp(head_.data() + 16, kMagic, 4) == 0;
  d.has_trailer = total_ >= 32 && total_ % 512 == 32;
  if (d.has_trailer) {
    Sha256Digest db = hash_.finish();
    d.db_bytes = total_ - 32;
    d.db_sha256 = to_hex(db);
    d.trailer_hex = to_hex(tail_.data(), tail_.size());
    d.trailer_matches = std::memcmp(db.data(), tail_.data(), 32) == 0;
  } else {
    hash_.update(tail_.data(), tail_len_);
    d.db_bytes = total_;
    d.db_sha256 = to_hex(hash_.finish());
  }
  return d;
}

void require_intact_snapshot(const SnapshotDigest& d, const std::string& what, bool allow_missing_trailer) {
  if (d.total_bytes == 0) throw Error(ErrorKind::kCorrupt, what + " is empty");
  if (!d.bbolt_magic_ok) {
    throw Error(ErrorKind::kCorrupt, what + " is not an etcd snapshot (no bbolt database header)");
  }
  if (!d.has_trailer) {
    if (allow_missing_trailer && d.total_bytes % 512 == 0) return;
    if (d.total_bytes % 512 == 0) {
      throw Error(ErrorKind::kCorrupt, what + " has no SHA-256 trailer (" + std::to_string(d.total_bytes) + " bytes)",
                  "a db copied from a data dir has none: pass --skip-hash-check if you trust it");
    }
    throw Error(ErrorKind::kCorrupt, what + " is truncated or padded: " + std::to_string(d.total_bytes) +
                                         " bytes is not a database plus its 32-byte SHA-256 trailer");
  }
  if (!d.trailer_matches) {
    throw Error(ErrorKind::kCorrupt,
                what + " failed its SHA-256 check: trailer says " + d.trailer_hex + ", data hashes to " + d.db_sha256,
                "the snapshot is damaged; use another backup");
  }
}

}  // namespace etcdadm

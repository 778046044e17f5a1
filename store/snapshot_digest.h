// The integrity rule of etcd snapshots: a snapshot streamed by Maintenance.Snapshot is the bbolt db
// followed by 32 bytes, the SHA-256 of the db. This sink forwards every byte unchanged and checks
// that rule on the fly (no second pass, no buffering beyond 32 bytes).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/byte_sink.h"

namespace etcdadm {

struct SnapshotDigest {
  uint64_t total_bytes = 0;      // everything seen, trailer included
  uint64_t db_bytes = 0;         // total minus the trailer (when there is one)
  bool has_trailer = false;      // size says "db + 32" (etcdctl's rule: size % 512 == 32)
  bool trailer_matches = false;  // SHA-256 of the db equals the trailer
  std::string db_sha256;         // hex SHA-256 of the db bytes (trailer excluded when present)
  std::string trailer_hex;       // the trailer as found (hex), empty without one
  bool bbolt_magic_ok = false;   // page 0 carries bbolt's meta magic
};

class SnapshotDigestSink : public ByteSink {
 public:
  explicit SnapshotDigestSink(ByteSink* next) : next_(next) {}
  void write(const uint8_t* data, size_t size) override;
  SnapshotDigest finish();

 private:
  ByteSink* next_;
  // Over everything except the last 32 bytes, which are held back: at the end they are either the
  // trailer, or (a trailer-less db) fed in too. One pass of SHA-256 either way.
  Sha256 hash_;
  std::array<uint8_t, 32> tail_{};
  size_t tail_len_ = 0;
  uint64_t total_ = 0;
  std::array<uint8_t, 24> head_{};
  size_t head_len_ = 0;
};

// Throws kCorrupt with a precise message unless `d` is a complete, intact snapshot.
// `allow_missing_trailer` accepts a db copied from a data dir (no trailer; nothing to check against).
void require_intact_snapshot(const SnapshotDigest& d, const std::string& what, bool allow_missing_trailer);

}  // namespace etcdadm

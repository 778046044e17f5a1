// Writing a new etcd WAL file (the member's raft log) as etcd's wal package writes one: records
// framed by an 8-byte little-endian length (the low 56 bits; when the record is padded to a
// multiple of 8 bytes, the top byte is 0x80 | pad), each a walpb.Record whose crc is the running
// CRC-32C (Castagnoli) over the data of every record so far, the first record being the crc
// record carrying the previous file's CRC (0 for the first file). The file is preallocated the way
// etcd preallocates its segments (64,000,000 bytes: kWalSegmentBytes, for write_new_synced_file),
// and what follows the last record is zeros, which etcd's reader takes as the end of the log.
#pragma once

#include <cstdint>
#include <string>

namespace etcdadm {

enum class WalRecordType : int64_t { kMetadata = 1, kEntry = 2, kState = 3, kCrc = 4, kSnapshot = 5 };

constexpr uint64_t kWalSegmentBytes = 64 * 1000 * 1000;  // etcd's wal.SegmentSizeBytes

// WAL segment file name: <seq %016x>-<index %016x>.wal.
std::string wal_file_name(uint64_t seq, uint64_t index);

// One frame (length, record, padding) for a record of `type` with `data`, continuing the running
// CRC `crc` (updated). `has_data`: etcd leaves a crc record's data unset (nil), not empty.
std::string wal_frame(WalRecordType type, const std::string& data, bool has_data, uint32_t& crc);

}  // namespace etcdadm

// Keys added, removed and changed between two snapshots (`etcdadm backup diff A B`), computed on
// the latest state of each key as of each snapshot (tombstones respected).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "etcd/datadir/bolt_reader.h"

namespace etcdadm {

struct KeyDiff {
  enum class Kind { kAdded, kRemoved, kChanged };
  Kind kind = Kind::kChanged;
  std::string key;
  int64_t mod_revision_a = 0;  // 0 when absent in A
  int64_t mod_revision_b = 0;  // 0 when absent in B
  uint64_t size_a = 0;         // value bytes
  uint64_t size_b = 0;
};

struct SnapshotDiff {
  std::vector<KeyDiff> entries;  // in key order
  uint64_t added = 0, removed = 0, changed = 0, unchanged = 0;
};

const char* key_diff_kind_name(KeyDiff::Kind kind);

// A key is "changed" when its value or lease differs (a rewrite of the same value is not a change).
// Memory: A's keys in the range (key + digest of the value), not the values themselves.
SnapshotDiff diff_snapshots(const BoltReader& a, const BoltReader& b, const std::string& key,
                            const std::string& range_end);

}  // namespace etcdadm

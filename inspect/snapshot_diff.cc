#include "inspect/snapshot_diff.h"

#include <map>

#include "common/sha256.h"
#include "etcd/datadir/snapshot_inspect.h"

namespace etcdadm {

namespace {

struct Seen {
  Sha256Digest value_digest;
  int64_t lease = 0;
  int64_t mod_revision = 0;
  uint64_t size = 0;
};

}  // namespace

const char* key_diff_kind_name(KeyDiff::Kind kind) {
  switch (kind) {
    case KeyDiff::Kind::kAdded:
      return "added";
    case KeyDiff::Kind::kRemoved:
      return "removed";
    case KeyDiff::Kind::kChanged:
      return "changed";
  }
  return "?";
}

SnapshotDiff diff_snapshots(const BoltReader& a, const BoltReader& b, const std::string& key,
                            const std::string& range_end) {
  std::map<std::string, Seen> in_a;
  visit_latest(a, key, range_end, [&](const SnapshotKeyValue& kv) {
    in_a[kv.key] = Seen{sha256_of(kv.value.data(), kv.value.size()), kv.lease, kv.mod_revision, kv.value.size()};
  });
  SnapshotDiff diff;
  std::vector<KeyDiff> changes;
  visit_latest(b, key, range_end, [&](const SnapshotKeyValue& kv) {
    auto it = in_a.find(kv.key);
    if (it == in_a.end()) {
      changes.push_back({KeyDiff::Kind::kAdded, kv.key, 0, kv.mod_revision, 0, kv.value.size()});
      ++diff.added;
      return;
    }
    const Seen& old = it->second;
    if (old.value_digest != sha256_of(kv.value.data(), kv.value.size()) || old.lease != kv.lease) {
      changes.push_back(
          {KeyDiff::Kind::kChanged, kv.key, old.mod_revision, kv.mod_revision, old.size, kv.value.size()});
      ++diff.changed;
    } else {
      ++diff.unchanged;
    }
    in_a.erase(it);
  });
  for (const auto& [k, old] : in_a) {
    changes.push_back({KeyDiff::Kind::kRemoved, k, old.mod_revision, 0, old.size, 0});
    ++diff.removed;
  }
  std::sort(changes.begin(), changes.end(), [](const KeyDiff& x, const KeyDiff& y) { return x.key < y.key; });
  diff.entries = std::move(changes);
  return diff;
}

}  // namespace etcdadm

// What an etcd snapshot holds, read natively (etcd/datadir/bolt_reader.h) without restoring it:
//   * `etcdctl snapshot status` exactly: hash (CRC-32C over every bucket name, key and value in
//     order), revision, totalKey, totalSize (3.4/3.5 semantics; 3.6's live-key count as an option)
//   * etcd's schema on top: members, cluster version, consistent index, compaction revisions, keys
//     and bytes per top-level prefix, leases, auth state, alarms
//   * the latest value of keys as of the snapshot (tombstones respected), for get and diff.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/datadir/bolt_reader.h"

namespace etcdadm {

enum class StatusSemantics { kEtcd34, kEtcd36 };

// The fields of `etcdctl snapshot status -w json`, but for `revision`.
struct SnapshotStatus {
  uint32_t hash = 0;
  // The revision a member restored from the snapshot serves (etcd/datadir/mvcc.h
  // store_revision, etcd's own rule): higher than the newest entry of the `key` bucket when a
  // compaction removed the newest entries (a delete's tombstone), and 1 for an empty store.
  // `etcdctl snapshot status` prints newest_key_revision instead, 0 for an empty store; save and
  // list record what the member served (its header revision), which is this.
  int64_t revision = 0;
  int64_t newest_key_revision = 0;
  int64_t total_key = 0;
  int64_t total_size = 0;
  std::string version;  // storage version (3.6 snapshots; "" before)
};
SnapshotStatus snapshot_status(const BoltReader& db, StatusSemantics semantics = StatusSemantics::kEtcd34);

struct SnapshotMember {
  uint64_t id = 0;
  std::string name;
  std::vector<std::string> peer_urls;
  std::vector<std::string> client_urls;
  bool learner = false;
};

struct PrefixStat {
  std::string prefix;  // e.g. "/registry/pods"
  uint64_t keys = 0;   // live keys under it as of the snapshot
  uint64_t bytes = 0;  // their key + value bytes
};

struct SnapshotLease {
  int64_t id = 0;
  int64_t ttl = 0;
  int64_t remaining_ttl = 0;
};

struct SnapshotInspection {
  SnapshotStatus status;
  std::vector<SnapshotMember> members;
  std::vector<uint64_t> removed_member_ids;
  std::string cluster_version;
  uint64_t consistent_index = 0;
  uint64_t term = 0;  // 3.5+
  std::optional<int64_t> scheduled_compact_revision;
  std::optional<int64_t> finished_compact_revision;
  uint64_t live_keys = 0;            // keys whose latest revision is not a tombstone
  uint64_t revisions = 0;            // entries in the `key` bucket (history kept since compaction)
  std::vector<PrefixStat> prefixes;  // by prefix, in key order
  std::vector<SnapshotLease> leases;
  bool auth_enabled = false;
  uint64_t auth_revision = 0;
  uint64_t users = 0;
  uint64_t roles = 0;
  std::vector<std::string> alarms;  // "NOSPACE on member 8e9e05c52164694d"
};

// The membership the db records (bucket `members`; etcd 3.4+ keeps it there beside the WAL), as
// the cluster last had it when the db was written. Throws kCorrupt for a member that is not JSON.
std::vector<SnapshotMember> snapshot_members(const BoltReader& db);

// The raft index of the last entry the db has applied (meta/consistent_index; 0 when absent).
uint64_t snapshot_consistent_index(const BoltReader& db);

// `prefix_depth`: how many '/'-separated levels make a prefix ("/registry/pods" is 2). One walk over
// the database (the status hash and the per-key latest state together). Memory: a 16-byte hash slot
// per distinct key, not the keys themselves, up to `in_memory_keys` keys (8 MiB of table by
// default); past that the rest of the `key` bucket goes to scratch files under $TMPDIR (24 bytes per
// revision) and is counted partition by partition, so memory stays flat whatever the db holds.
constexpr size_t kInspectInMemoryKeys = size_t{1} << 18;
SnapshotInspection inspect_snapshot(const BoltReader& db, int prefix_depth = 2,
                                    size_t in_memory_keys = kInspectInMemoryKeys);

// A key's latest state as of the snapshot.
struct SnapshotKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

// Visits the live keys in [key, range_end) (etcd's range rules: range_end "" = just `key`;
// "\0" = every key >= key), in key order, each with its latest value. Memory is proportional to the
// number of keys in the range, not to the snapshot.
void visit_latest(const BoltReader& db, const std::string& key, const std::string& range_end,
                  const std::function<void(const SnapshotKeyValue&)>& visit);

// Whether any revision in the snapshot's key bucket is of a key starting with `prefix` (a put or a
// deletion: a keyspace whose clients once watched such keys). Walks the bucket in revision order
// and stops at the first one, so a Kubernetes keyspace answers at once; a keyspace without any
// reads the whole bucket. Throws kCorrupt for an entry that is not a KeyValue.
bool holds_key_with_prefix(const BoltReader& db, std::string_view prefix);

// The range that selects every key with `prefix`, as etcd's clientv3.WithPrefix builds it: `end` is
// GetPrefixRangeEnd(prefix), and an empty prefix means every key ("\0" to "\0").
struct PrefixRange {
  std::string key, range_end;
};
PrefixRange prefix_range(const std::string& prefix);

}  // namespace etcdadm

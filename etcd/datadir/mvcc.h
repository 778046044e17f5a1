// etcd's mvcc layout in its backend (the `key` and `meta` buckets), the pieces every reader and
// writer of a snapshot needs: revisions as keys, the newest revision, and the revision etcd serves
// once it opens a db. Unchanged from etcd 3.4 to 3.7 (server/storage/mvcc: revision.go, kvstore.go).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "etcd/datadir/bolt_reader.h"

namespace etcdadm {

// The newest main revision in an etcd backend's `key` bucket (0 when empty). Throws kCorrupt when
// the bucket ends with a key that is not a revision.
int64_t newest_revision(const BoltReader& db);
// The revision etcd serves once it has opened `db` (mvcc's restore): the newest main revision in
// the key bucket, raised to meta/finishedCompactRev and meta/scheduledCompactRev (a compaction may
// have removed the newest revisions' tombstones), and at least 1 (an empty store).
int64_t store_revision(const BoltReader& db);
// An mvcc revision as a key of the `key` bucket: main (8 bytes BE) '_' sub (8 bytes BE).
std::string revision_key(int64_t main, int64_t sub);
// 8 bytes, big endian: etcd's encoding of meta counters and of lease IDs as `lease` bucket keys.
std::string big_endian_u64(uint64_t v);
// The inverse of big_endian_u64 over the first 8 bytes of `b` (which must hold 8).
uint64_t read_big_endian_u64(std::string_view b);

}  // namespace etcdadm

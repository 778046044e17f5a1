// Reading what etcd keeps of its raft state in a member's data dir:
// - `member/snap/<term %016x>-<index %016x>.snap`, raft snapshots, each a snappb.Snapshot (the
//   CRC-32C of a raftpb.Snapshot, and that snapshot). A member that starts with one loads its raft
//   log from it: the log it serves begins after the snapshot's index, so a member that joins it
//   later is sent the db (etcd's snapshot message), never the entries before;
// - `member/wal/*.wal`, the raft log, each segment opening with a crc record and the metadata
//   record (etcdserverpb.Metadata: the member's and the cluster's IDs); framing as
//   etcd/datadir/wal_writer.h writes it.
#pragma once

#include <cstdint>
#include <string>

namespace etcdadm {

// The index of the newest raft snapshot in `snap_dir` whose file parses and whose CRC holds (etcd
// starts from the newest such file, naming a broken one `.broken` and trying the one before);
// 0 when there is none (a member that never took one: its log begins at index 1).
uint64_t newest_raft_snapshot_index(const std::string& snap_dir);

struct WalIdentity {
  uint64_t member_id = 0;
  uint64_t cluster_id = 0;
};
// The member's and cluster's IDs from the metadata record at the head of the newest segment in
// `wal_dir`; throws kCorrupt (or kNotFound without a segment) when it does not read or its CRC
// does not hold.
WalIdentity wal_identity(const std::string& wal_dir);

}  // namespace etcdadm

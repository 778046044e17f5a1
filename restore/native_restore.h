// The native restore: a member's data dir written by etcdadm itself from a verified snapshot, with
// what `etcdutl snapshot restore` (3.5-3.7) / `etcdctl snapshot restore` (3.4) writes, so that no Go
// tool is needed at restore time and etcd 3.4 members get the revision bump Kubernetes needs.
// docs/store-format.md ("Member data dir") describes every byte; the differences from etcd's tools
// are deliberate and listed there:
//   - member/snap/db: the snapshot, then one copy-on-write bbolt transaction (bolt_writer.h):
//     buckets `members` (the new cluster's members, JSON by ID) and `members_removed` (emptied),
//     `cluster` created when absent, meta/consistent_index = number of members, meta/term = 1
//     (3.5+), and with a bump: key[(latest main + N, 0)] = "" and, with mark-compacted,
//     meta/scheduledCompactRev = that revision. For 3.4 the members buckets are rewritten too,
//     where etcdctl 3.4 leaves the old cluster's members in them (and deletes user keys named
//     like an old member's ID): a bug of that tool we do not copy.
//   - member/wal/0000000000000000-0000000000000000.wal: crc, metadata {member ID, cluster ID},
//     snapshot {0, 0}, one ConfChange AddNode entry per member (ascending IDs, term 1, index i),
//     hard state {term 1, vote = lowest ID, commit N}, snapshot {N, 1, voters}.
//   - member/snap/<term 1>-<index N>.snap: the raft snapshot at {N, 1} whose data is the v2 store
//     JSON with the members (3.4-3.6 read it on start; 3.7 ignores it).
// Byte for byte what etcd's tool of the `flavor` version writes in the WAL and .snap (tested against
// each of them); the db matches in content, not in page layout.
#pragma once

#include <cstdint>
#include <string>

#include "etcd/datadir/bolt_reader.h"
#include "etcd/etcd_version.h"
#include "restore/new_cluster.h"

namespace etcdadm {

struct NativeRestorePlan {
  NewCluster cluster;
  std::string member_name;  // the member this data dir is for
  // --bump-revision / --mark-compacted, as etcdutl's: both or neither.
  uint64_t bump_revision = 0;
  bool mark_compacted = false;
};

struct NativeRestoreResult {
  uint64_t member_id = 0;
  uint64_t cluster_id = 0;
  int64_t snapshot_revision = 0;  // the newest revision in the snapshot's key bucket
  int64_t revision = 0;           // the member's revision after the bump (= snapshot_revision without)
};

// Whether the native restore is verified (by the test suite, against that version's etcd and
// tool) for snapshots of etcd `v` and for members running `v`.
bool native_restore_verified(const EtcdVersion& v);
// "3.4, 3.5, 3.6 and 3.7", for messages.
std::string native_restore_verified_versions();

// Checks a --bump-revision / --mark-compacted pair as etcdutl does (both or neither); throws
// kInvalidArgument with etcdutl's rule otherwise.
void check_revision_bump(uint64_t bump_revision, bool mark_compacted);

// Writes a member data dir at `data_dir` (which must not exist; created 0700). Usage: construct,
// put the verified snapshot (its trailer may stay: `db_bytes` says where the db ends) at db_path(),
// then finish(). Everything is fsynced when finish() returns; the caller moves the directory into
// place. Nothing outside `data_dir` is touched, so a failure at any point leaves only it to remove.
class NativeDataDirWriter {
 public:
  NativeDataDirWriter(std::string data_dir, NativeRestorePlan plan);
  const std::string& db_path() const { return db_path_; }
  // Replaces the plan's bump before finish() (the Kubernetes rule reads the placed db to decide:
  // restore_method.h). Checked as the plan's is.
  void set_revision_bump(uint64_t bump_revision, bool mark_compacted);
  // `flavor`: the etcd whose tool's output to reproduce (3.4 .. 3.7: the version the member will
  // run). Throws kCorrupt when the db is not an etcd backend (no `meta` or `key` bucket, revisions
  // that are not revisions) before changing it.
  NativeRestoreResult finish(uint64_t db_bytes, const EtcdVersion& flavor);

 private:
  std::string data_dir_, db_path_;
  NativeRestorePlan plan_;
};

// The bytes etcd's tools write, exposed for the known-answer tests.
std::string etcd_member_json(const NewMember& m);
std::string v2_store_json(const NewCluster& cluster, const EtcdVersion& flavor);
std::string wal_records_for_restore(const NewCluster& cluster, const std::string& member_name,
                                    const EtcdVersion& flavor);
std::string snap_file_for_restore(const NewCluster& cluster, const EtcdVersion& flavor);

}  // namespace etcdadm

// Point-in-time restore's replay: the change log's records written straight into a restored
// snapshot's bbolt db, as etcd's own mvcc layer would have written them, so that every revision
// after the snapshot comes out identical to the original cluster's (one original revision = one
// replayed revision; same sub-revisions, create/mod revisions, versions, values and leases):
//   - key bucket: (revision, sub) -> the event's KeyValue for a PUT; (revision, sub) + 't' ->
//     KeyValue{key} for a DELETE (etcd's tombstone), exactly the bytes etcd stores;
//   - lease bucket: each lease a record grants -> leasepb.Lease{ID, TTL} (the granted TTL), as
//     etcd's lessor persists a grant. A lease already gone when the sidecar asked is not
//     created: its keys' deletions are in the log.
// No etcd runs, so no lease can expire mid-replay (what makes delta replays through a live etcd
// lose or invent deletions). A record is made ready for the db on any thread (prepare_record: the
// bytes above, checked), then applied in revision order: apply() gathers the records into batches
// of a bounded size, and a thread of its own commits each batch as one bbolt write transaction
// (bolt_writer.h: the key bucket's new entries appended, their keys growing with the revision)
// while the next batch is gathered. Writing the pages into the file is most of a replay's time
// (the kernel's copy into the page cache), so it runs beside the decoding and gathering rather
// than after them. The commits are not synced one by one: finish() syncs the file once. The db is
// the restore's staging copy, so a failure, or a crash before finish(), leaves nothing behind.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "etcd/proto/changelog.pb.h"

namespace etcdadm {

// One change log record as the db stores it.
struct PreparedRecord {
  int64_t revision = 0;
  int64_t observed_unix_micros = 0;
  int64_t committed_after_unix_micros = 0;
  uint64_t events = 0;
  std::vector<std::pair<std::string, std::string>> keys;    // key bucket, in key order
  std::vector<std::pair<std::string, std::string>> leases;  // lease bucket
  uint64_t bytes = 0;                                       // of keys and values, both buckets
  // Why the record cannot be applied (an event of another revision); apply() throws it. Not thrown
  // by prepare_record: a record the replay never reaches (past its target) fails nothing.
  std::string defect;
};

PreparedRecord prepare_record(const changelog::Record& record);

class LogReplay {
 public:
  // `db_bytes`: the database's bytes in the file (the snapshot's trailer excluded); 0 = the whole
  // file. `snapshot_revision`: the db's newest revision (newest_revision): records at or below it
  // are already in the db and must not be given.
  LogReplay(std::string db_path, uint64_t db_bytes, int64_t snapshot_revision);
  // Without finish(): waits for the commit under way, drops what is not committed (the caller
  // discards the file).
  ~LogReplay();
  LogReplay(const LogReplay&) = delete;
  LogReplay& operator=(const LogReplay&) = delete;
  // The next revision: exactly revision() + 1 (kInternal otherwise, a caller's bug). A record with
  // a defect throws changelog::SegmentError(kCorrupt). A failed commit of an earlier batch is
  // thrown by a later apply() or by finish().
  void apply(PreparedRecord record);
  // Commits what is gathered, waits for every commit and syncs the file. After it, the db file is
  // exactly the database (no trailer).
  void finish();
  int64_t revision() const { return revision_; }
  uint64_t events() const { return events_; }

 private:
  // The records of one bbolt commit.
  struct Batch {
    std::vector<std::pair<std::string, std::string>> keys;    // key bucket, appended in order
    std::vector<std::pair<std::string, std::string>> leases;  // lease bucket
    uint64_t bytes = 0;
  };
  void hand_over();           // the gathered batch to the committer (waits while it holds one already)
  void commit_loop();         // the committer thread
  void commit(Batch& batch);  // one bbolt write transaction, on the committer thread
  void stop_committer();

  const std::string path_;
  int64_t revision_;
  uint64_t events_ = 0;
  Batch gathering_;  // the apply() side's

  // Shared with the committer, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Batch> handed_;  // waiting for the committer
  bool committing_ = false;
  bool stop_ = false;
  std::exception_ptr failed_;
  uint64_t db_bytes_;  // the committer's: the trailer is cut by the first commit, then 0
  std::thread committer_;
};

}  // namespace etcdadm

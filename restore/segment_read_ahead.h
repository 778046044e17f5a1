// The records of a change log chain read ahead of the replay: each segment fetched, checked
// against its digest, decrypted, inflated, parsed and made ready for the db (prepare_record) on a
// worker thread, the records handed to the one thread that applies them, in chain order.
//
// Memory is bounded in bytes, not segments: a worker stops once its segment has
// `bytes_per_segment` of records not yet taken (one larger record always passes), and workers take
// a segment at most `ahead` segments past the one being taken. So a replay of any length holds
// about workers x (bytes_per_segment + one stored segment) whatever the segments' size.
//
// A segment's error is thrown by the next() after its last good record, not before: the replay
// reports the first failing segment it reaches, and one it never reaches (past its target) fails
// nothing.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "changelog/segment.h"
#include "restore/log_replay.h"
#include "store/backup_store.h"

namespace etcdadm {

class SegmentReadAhead {
 public:
  // `chain`: the segments to read, in order; `all`: every segment listed (for the twins
  // read_segment_or_twin tries). `threads` workers (at least 1).
  SegmentReadAhead(const BackupStore& backups, std::vector<changelog::SegmentName> chain,
                   std::vector<changelog::SegmentName> all, size_t threads, size_t ahead, uint64_t bytes_per_segment);
  // Stops the workers; what they read is dropped.
  ~SegmentReadAhead();
  SegmentReadAhead(const SegmentReadAhead&) = delete;
  SegmentReadAhead& operator=(const SegmentReadAhead&) = delete;

  // The next record in chain order, nullopt after the last segment's last. Rethrows a segment's
  // error once its good records were taken. A segment read again from its twin after a key did not
  // open it may give its first records twice: the caller skips revisions it has.
  std::optional<PreparedRecord> next();
  // How many segments next() has begun handing out.
  size_t segments_begun() const { return begun_; }

  // Workers for a replay on this machine: one core is the applying thread's.
  static size_t default_threads();

 private:
  struct Slot {
    std::deque<PreparedRecord> records;
    uint64_t bytes = 0;
    bool done = false;
    std::exception_ptr error;
  };
  struct Stopped {};
  void work();

  const BackupStore backups_;  // a handle (the storage is borrowed or shared)
  const std::vector<changelog::SegmentName> chain_;
  const std::vector<changelog::SegmentName> all_;
  const size_t ahead_;
  const uint64_t bytes_per_segment_;
  std::mutex mu_;
  std::condition_variable ready_;  // a record was added or a segment finished
  std::condition_variable room_;   // a record or a segment was taken, or stop
  std::vector<Slot> slots_;
  size_t next_to_read_ = 0;
  size_t next_to_take_ = 0;
  size_t begun_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace etcdadm

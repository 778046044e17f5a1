// The segments of a change log chain read ahead of the replay: fetched, checked against their
// digest, decrypted, inflated, parsed and made ready for the db (prepare_record) on worker
// threads, handed to the one thread that applies them in chain order. At most `ahead` segments
// are read and not yet taken, which bounds memory by `ahead` segments' plaintext.
//
// A segment's error is thrown by the next() that would return it, not before: the replay reports
// the first failing segment it reaches, and one it never reaches (past its target) fails nothing.
#pragma once

#include <condition_variable>
#include <cstddef>
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
                   std::vector<changelog::SegmentName> all, size_t threads, size_t ahead);
  // Stops the workers after the segment each is reading; what they read is dropped.
  ~SegmentReadAhead();
  SegmentReadAhead(const SegmentReadAhead&) = delete;
  SegmentReadAhead& operator=(const SegmentReadAhead&) = delete;

  // The next segment's records in order, nullopt after the last one. Rethrows the segment's error.
  std::optional<std::vector<PreparedRecord>> next();

  // Workers for a replay on this machine: one core is the applying thread's.
  static size_t default_threads();

 private:
  struct Slot {
    bool done = false;
    std::vector<PreparedRecord> records;
    std::exception_ptr error;
  };
  void work();

  const BackupStore backups_;  // a handle (the storage is borrowed or shared)
  const std::vector<changelog::SegmentName> chain_;
  const std::vector<changelog::SegmentName> all_;
  const size_t ahead_;
  std::mutex mu_;
  std::condition_variable ready_;   // a slot was filled
  std::condition_variable room_;    // a slot was taken, or stop
  std::vector<Slot> slots_;
  size_t next_to_read_ = 0;
  size_t next_to_take_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace etcdadm

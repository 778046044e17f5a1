// Opening a snapshot for the native reader (inspect, get, diff, restore-keys, verify): a local
// snapshot file, or a store backup fetched and verified into a private scratch directory that goes
// away with the SnapshotSource.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/fs.h"
#include "etcd/datadir/bolt_reader.h"
#include "restore/fetch.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/layout.h"
#include "store/snapshot_digest.h"

namespace etcdadm {

// How a snapshot file's SHA-256 trailer is checked: before reading it, on a second thread while it
// is read, or not at all (hashing the whole file costs more than a whole inspection). The cheap
// checks (empty, not a bbolt file, size not "db + trailer") are made in every mode.
enum class TrailerCheck { kFirst, kConcurrent, kSkip };

// One pass of SHA-256 over a snapshot file through the digest check (no copy is made).
SnapshotDigest digest_snapshot_file(const std::string& path);

class SnapshotSource {
 public:
  // A local file (`etcdctl snapshot save` output, or a db without trailer). Throws kCorrupt for a
  // file that fails the chosen checks.
  static std::unique_ptr<SnapshotSource> open_file(const std::string& path, TrailerCheck check);
  // A store backup: every hash checked while fetching it into a scratch dir.
  static std::unique_ptr<SnapshotSource> open_backup(const BackupStore& store, const BackupRecord& backup);
  ~SnapshotSource();
  SnapshotSource(const SnapshotSource&) = delete;
  SnapshotSource& operator=(const SnapshotSource&) = delete;

  const BoltReader& db() const { return *db_; }
  const std::string& path() const { return path_; }  // the file the reader reads
  bool trailer_checked() const { return trailer_checked_; }
  const std::optional<FetchResult>& fetched() const { return fetched_; }  // open_backup only

  // With TrailerCheck::kConcurrent: waits for the SHA-256 and throws kCorrupt when it does not
  // match. A no-op otherwise, and after the first call.
  void finish_trailer_check();

 private:
  SnapshotSource() = default;

  std::unique_ptr<ScratchDir> scratch_;
  std::string path_;
  std::unique_ptr<BoltReader> db_;
  bool trailer_checked_ = false;
  std::optional<FetchResult> fetched_;
  std::thread trailer_thread_;
  SnapshotDigest trailer_digest_;
  std::exception_ptr trailer_error_;
};

}  // namespace etcdadm

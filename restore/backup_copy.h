// `backup copy`: a second copy of backups in another store (the 3-2-1 layout: two stores, one of
// them locked), between any two backends. Each backup is streamed once, source to target, its
// stored bytes checked on the way against the recorded SHA-256 (etcd-manager's backups, which
// record none, get the full check of `backup verify`); a source that fails a check is refused and
// nothing of it stays in the target. The files go in the store's write order (data, our metadata,
// etcd-manager's last: docs/store-format.md §4), so a copy killed at any point leaves nothing a
// reader lists as a backup that is not whole, and a re-run completes it. What the target already
// holds (same metadata, data of the recorded size) is skipped. Change-log segments that extend the
// copied backups follow (their names carry their digest), then the log's heartbeat.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm {

struct CopiedBackup {
  std::string name;
  bool copied = false;  // false: the target held it already
  uint64_t bytes = 0;   // stored bytes streamed
};

struct CopyResult {
  std::vector<CopiedBackup> backups;
  size_t segments_copied = 0, segments_present = 0;
  uint64_t bytes = 0;  // everything streamed (data files and segments)
  double seconds = 0;
  std::vector<std::string> damaged;  // one message per source backup that failed a check (not copied)
};

// Makes `to` a store that can hold `from`'s backups: a target without a marker gets the source's
// marker (same layout, compression, file mode and recipients); a target whose encryption differs
// from the source's is refused (kInvalidArgument): one store, one audience.
void prepare_copy_target(BlobStore& from, BlobStore& to);

// Copies `backups` (records of `from`, in the order given: oldest first leaves the older ones whole
// when a copy is killed) and, with `change_log`, the segments of their clusters' logs from the
// oldest copied one's revision on. A source backup that fails a check is recorded as damaged
// (restore/damage.h; `catalog` may be null), named in `damaged` and skipped: the others are
// copied. Anything else stops the copy with its error (kAlreadyExists when the target holds a
// different backup of the same name, the store's errors); what was copied before it stays.
CopyResult copy_backups(const BackupStore& from, Catalog* catalog, BlobStore& to,
                        const std::vector<BackupRecord>& backups, bool change_log = true);

// The sidecar's --copy-to after each backup: copies the backups of `from` named after the newest
// backup `to` holds (all of them into an empty `to`), oldest first, with their change log. A backup
// a failed run missed is older than nothing the target holds, so the next run takes it; one older
// than the target's newest (pruned there by its own retention) is never copied back.
CopyResult copy_new_backups(const BackupStore& from, Catalog& catalog, BlobStore& to);

}  // namespace etcdadm

// `backup verify`: every hash of a backup (restore/fetch.h verify_backup) and then its structure:
// the snapshot is fetched, verified, into a private temporary directory and read with the native
// bbolt reader (restore/bolt_reader.h), walking every bucket the way `etcdctl snapshot status` does.
// The temporary copy is removed afterwards. What the walk read is cached in the catalog, when one is
// given, so that `backup list` can show it.
#pragma once

#include <cstdint>

#include "restore/fetch.h"
#include "restore/snapshot_inspect.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm {

struct VerifyResult {
  FetchResult fetch;       // the hash checks
  SnapshotStatus status;   // revision, totalKey, hash (CRC-32C), totalSize from the full walk
  uint64_t live_keys = 0;  // keys whose latest revision is not a tombstone
};

// Hashes, then structure. A structural failure is Error(kCorrupt) naming the backup and, from the
// reader, the page. The snapshot is fetched under $TMPDIR (default /tmp), which needs room for the
// uncompressed db. A catalog that cannot record the result only costs a warning: the backup was
// verified all the same.
VerifyResult verify_backup_deep(BlobStore& store, const BackupRecord& backup, Catalog* catalog);

}  // namespace etcdadm

// `backup verify`: every hash of a backup (restore/fetch.h verify_backup) and then its structure:
// the snapshot is fetched, verified, into a private temporary directory and read with the native
// bbolt reader (etcd/datadir/bolt_reader.h), walking every bucket the way `etcdctl snapshot status` does.
// The temporary copy is removed afterwards. What the walk read is cached in the catalog, when one is
// given, so that `backup list` can show it.
#pragma once

#include <cstdint>
#include <optional>

#include "etcd/datadir/snapshot_inspect.h"
#include "restore/fetch.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm {

struct VerifyResult {
  FetchResult fetch;       // the hash checks
  SnapshotStatus status;   // revision, totalKey, hash (CRC-32C), totalSize from the full walk
  uint64_t live_keys = 0;  // keys whose latest revision is not a tombstone
};

// How deep a check reads a backup.
enum class VerifyDepth {
  kStoredBytes,  // the stored bytes' SHA-256 and, encrypted, the age header: needs no key
  kHashes,       // decrypted and inflated: the db's SHA-256 and its trailer (verify_backup)
  kStructure,    // and every bucket walked in a temporary copy (verify_backup_deep)
};

// The depth a check that wants `wanted` reaches on `backup`, the one rule for `backup verify` and
// the sidecar: the hashes of an encrypted backup, without its identity among the store's keys,
// are checked as far as its stored bytes and age header (all a sidecar holding only recipients
// can read). A structural check is never lowered: without the key it fails, asking for it.
VerifyDepth reachable_depth(const BackupStore& store, const BackupRecord& backup, VerifyDepth wanted);

// One check at `depth`. With kStructure, the walk's result goes to *structure (when given).
FetchResult verify_to_depth(const BackupStore& store, const BackupRecord& backup, VerifyDepth depth, Catalog* catalog,
                            std::optional<VerifyResult>* structure = nullptr);

// Hashes, then structure. A structural failure is Error(kCorrupt) naming the backup and, from the
// reader, the page. The snapshot is fetched under $TMPDIR (default /tmp), which needs room for the
// uncompressed db. A catalog that cannot record the result only costs a warning: the backup was
// verified all the same.
VerifyResult verify_backup_deep(const BackupStore& store, const BackupRecord& backup, Catalog* catalog);

}  // namespace etcdadm

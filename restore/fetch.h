// Reading a backup back out of a store, verified: the stored bytes against their recorded SHA-256,
// the decompression (gzip CRC / zstd checksum), the snapshot's own SHA-256 trailer and the recorded
// db SHA-256. Output is written under a temporary name and becomes visible only when every check
// has passed: a corrupt, truncated or tampered backup never reaches the output path.
#pragma once

#include <string>

#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/layout.h"
#include "store/snapshot_digest.h"

namespace etcdadm {

struct FetchResult {
  SnapshotDigest digest;
  uint64_t stored_bytes = 0;
  std::string stored_sha256;
};

// Verifies and writes the raw snapshot (trailer included, as `etcdctl snapshot save` writes it)
// to `output_path`, mode 0600. `durable` = false skips fsync, for a scratch copy consumed at once.
FetchResult fetch_verified(const BackupStore& store, const BackupRecord& backup, const std::string& output_path,
                           bool overwrite, bool durable = true);

// The same checks without writing anything (`backup verify`).
FetchResult verify_backup(const BackupStore& store, const BackupRecord& backup);

// What can be checked of an encrypted backup without its key (a sidecar that holds only the
// public recipients, `backup verify --shallow` without --identity): the stored bytes against their
// recorded SHA-256, and a well-formed age header. `digest` stays empty.
FetchResult verify_stored_bytes(BlobStore& store, const BackupRecord& backup);

// Reads the backup's data file once, passing its stored bytes unchanged to `copy` while checking
// them (`backup copy`): against the recorded stored SHA-256 (and the age header) when one is
// recorded, which needs no key and no decompression; otherwise (etcd-manager's backups) by the
// full check of fetch_verified. Throws kCorrupt when a check fails: the caller must then discard
// what `copy` received.
FetchResult copy_verified(const BackupStore& store, const BackupRecord& backup, ByteSink& copy);

}  // namespace etcdadm

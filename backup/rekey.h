// `backup rekey`: who can open an encrypted store's backups, changed without re-encrypting them.
// The store marker gets the new recipients (every later save encrypts to them); each backup's age
// header is re-made for them around the same file key, and the payload is copied byte for byte.
// Per backup, in this order, so that a kill at any point leaves it readable with the old key or
// the new one (docs/store-format.md §2b):
//   1. the new data file is streamed (new header + the old payload) and not yet visible; the old
//      one's SHA-256 is checked on the way: a damaged backup is never rekeyed;
//   2. the metadata gains "rekeyInProgress" (the new digest and recipients): readers accept both;
//   3. the new data file replaces the old one (one atomic commit);
//   4. the metadata is rewritten with the new digest and recipients only.
// Re-running after a kill finishes the job. Docs/encryption.md says what it does not protect
// against: a copy of the old file (a noncurrent object version, a download) still opens with the
// old key, and so does anything encrypted before with a file key someone kept.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/encryption.h"

namespace etcdadm {

struct RekeyOptions {
  // New recipients for the store (--encrypt-to, --encrypt-to-file, --new-passphrase-file); none:
  // the backups are rekeyed to the recipients the store already has.
  std::optional<EncryptionRequest> new_recipients;
  // The passphrase of a passphrase store, when it stays the target (a rekey to it needs it).
  std::optional<std::string> current_passphrase;
  std::vector<std::string> names;  // backups to rekey (full names)
  bool all = false;                // every encrypted backup not encrypted to the store's recipients yet,
                                   // and every change log segment (docs/store-format.md §8)
};

struct RekeyResult {
  std::vector<std::string> recipients;  // the store's recipients now (labels)
  bool store_changed = false;           // the marker got new recipients
  std::vector<std::string> rekeyed;
  std::vector<std::string> already;  // were encrypted to exactly these recipients
  int segments_rekeyed = 0;          // change log segments (--all only)
  int segments_already = 0;
  // Versioned buckets: noncurrent versions of the replaced files (still encrypted to the old
  // recipients) removed, and those the bucket refused to delete (Object Lock, retention).
  size_t old_versions_removed = 0;
  std::vector<std::string> old_versions_kept;
};

// Keys to open the backups come from the store handle (BackupStore::keys). Throws on the first backup that
// fails (kAuth: no key opens it; kCorrupt: damaged); the ones before it are done.
RekeyResult rekey_backups(const BackupStore& store, Catalog* catalog, const RekeyOptions& options);

}  // namespace etcdadm

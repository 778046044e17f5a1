// `backup save`: one snapshot streamed from a healthy member into the store, in a single pass:
// receive -> SHA-256 check of the db -> compress -> hash the stored bytes -> write. No temp copy of
// the db, bounded memory whatever the db size. The backup becomes visible only once all its files
// are written (etcd-manager meta last); a snapshot whose digest does not match is never committed.
// `backup import` does the same for a snapshot file made elsewhere (e.g. `etcdctl snapshot save`).
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "etcd/client.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm {

struct SaveOptions {
  std::string preferred_endpoint;  // take the snapshot from this member when healthy
  // --compression / --store-mode: only for a new store (or a marker from before file modes);
  // default: the store's settings (gzip, 0600 for new stores).
  StoreRequest store;
  int compression_level = -1;                      // < 0: codec default
  std::chrono::milliseconds stall_timeout{30000};  // give up when the member sends nothing this long
  // Before saving, remove what earlier saves killed mid-upload left in the store once it is this
  // old (LeftoverUploads::remove_abandoned); zero turns it off.
  std::chrono::seconds clean_abandoned_after{std::chrono::hours(24)};
  // When set and it becomes true, the save stops at the next chunk with Error(kInterrupted,
  // "cancelled"), as a cancelled drill does, and is never retried; nothing of it stays in the store
  // (the sidecar's shutdown after its grace period).
  const std::atomic<bool>* cancel = nullptr;
  // Recorded with the attempt in the catalog (AttemptRecord::origin).
  std::string attempt_origin = "save";
};

struct SaveResult {
  BackupMeta meta;
  std::string store_url;
};

SaveResult save_backup(EtcdClient& client, BlobStore& store, Catalog* catalog, const SaveOptions& options);

struct ImportOptions {
  StoreRequest store;  // as SaveOptions::store
  int compression_level = -1;
  bool skip_hash_check = false;  // accept a db without SHA-256 trailer (copied from a data dir)
  std::string etcd_version;      // recorded in the metadata (unknown otherwise)
};

SaveResult import_snapshot(const std::string& file, const BackupStore& store, Catalog* catalog,
                           const ImportOptions& options);

}  // namespace etcdadm

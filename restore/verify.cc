#include "restore/verify.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/fs.h"
#include "common/timefmt.h"
#include "etcd/datadir/bolt_reader.h"
#include "restore/damage.h"

namespace etcdadm {

namespace {

void record(Catalog* catalog, BlobStore& store, const BackupRecord& backup, const VerifyResult& r) {
  if (catalog == nullptr) return;
  VerificationRecord v;
  v.revision = r.status.revision;
  v.total_key = r.status.total_key;
  v.live_keys = r.live_keys;
  v.hash = r.status.hash;
  v.verified_at_micros = to_unix_micros(std::chrono::system_clock::now());
  try {
    catalog->record_verification(store.url(), backup, v);
  } catch (const Error& e) {
    spdlog::warn("backup verified, but the result could not be cached in the catalog: {}", e.what());
  }
}

}  // namespace

VerifyResult verify_backup_deep(const BackupStore& backups, const BackupRecord& backup, Catalog* catalog) {
  BlobStore& store = *backups;
  ScratchDir scratch("etcdadm-verify");
  std::string db_path = scratch.path() + "/snapshot.db";
  VerifyResult r;
  r.fetch = fetch_verified(backups, backup, db_path, /*overwrite=*/false, /*durable=*/false);
  try {
    auto db = BoltReader::open(db_path, r.fetch.digest.db_bytes);
    SnapshotInspection inspection = inspect_snapshot(*db);
    r.status = inspection.status;
    r.live_keys = inspection.live_keys;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt && e.kind() != ErrorKind::kNotFound) throw;
    // The reader names the scratch copy, which is gone by the time anyone reads the message.
    std::string detail = e.what();
    if (detail.rfind(db_path + ": ", 0) == 0) detail = detail.substr(db_path.size() + 2);
    throw Error(ErrorKind::kCorrupt,
                "backup " + backup.name + " in " + store.url() +
                    ": every hash matches but the snapshot is structurally damaged: " + detail,
                "the snapshot was damaged before it was hashed (etcd or disk fault on the member); use another backup");
  }
  record(catalog, store, backup, r);
  if (catalog != nullptr)
    clear_damage(store, *catalog, backup);  // every check passed: whatever was recorded no longer holds
  return r;
}

VerifyDepth reachable_depth(const BackupStore& store, const BackupRecord& backup, VerifyDepth wanted) {
  if (wanted == VerifyDepth::kHashes && backup.encrypted() && store.keys() == nullptr) return VerifyDepth::kStoredBytes;
  return wanted;
}

FetchResult verify_to_depth(const BackupStore& store, const BackupRecord& backup, VerifyDepth depth, Catalog* catalog,
                            std::optional<VerifyResult>* structure) {
  switch (depth) {
    case VerifyDepth::kStoredBytes:
      return verify_stored_bytes(*store, backup);
    case VerifyDepth::kHashes:
      return verify_backup(store, backup);
    case VerifyDepth::kStructure:
      break;
  }
  VerifyResult deep = verify_backup_deep(store, backup, catalog);
  FetchResult fetch = deep.fetch;
  if (structure) *structure = std::move(deep);
  return fetch;
}

}  // namespace etcdadm

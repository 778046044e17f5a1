// What the sidecar runs after its backups, bound to the restore library and holding the store handle (its keys) they
// read with: reading each backup back (as `backup verify` does), drilling the newest intact one (`backup drill`), and
// bringing a second store up to date (`backup copy --all-new`). The Sidecar takes them as functions
// (SidecarOptions::verify, drill, copy), so that a test can give it others; these are the ones
// `etcdadm backup sidecar` gives it.
#pragma once

#include <functional>
#include <string>

#include "restore/drill.h"
#include "sidecar/sidecar.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/catalog.h"

namespace etcdadm {

// Checks every hash of the backup, decrypting it where the store holds its identity, and only its
// stored bytes and age header where the sidecar holds recipients alone (restore/verify.h
// reachable_depth). A backup found damaged is recorded as such (restore/damage.h).
std::function<void(const std::string& name)> verify_after_backup(BackupStore store, Catalog& catalog);

// Drills the backup with `options` (restore/drill.h) and records the result in the store and the
// catalog; `cancel` (the sidecar stopping) interrupts it.
std::function<DrillOutcome(const std::string& name, const std::atomic<bool>* cancel)> drill_backup(
    BackupStore store, Catalog& catalog, DrillOptions options);

// Copies the backups `to` lacks, newer than its newest, with their change log (restore/backup_copy.h).
std::function<CopyOutcome()> copy_new_backups_to(BackupStore from, Catalog& catalog, BlobStore& to);

}  // namespace etcdadm

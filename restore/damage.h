// What etcdadm does when a backup turns out damaged: it remembers it (a marker in the store that
// every host and tool sees, and this host's catalog), `latest` skips it from then on, and the error
// names the next candidate and the exact command to use it. A verification that passes later
// clears the record (a damaged file restored from elsewhere). Nothing here ever picks older data
// silently: skipping is always reported.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm {

// "etcdadm 0.1.0 on host-a": who wrote a damage marker or a drill result.
std::string etcdadm_on_this_host();

// Records `b` as damaged: the marker in the store (best effort: a read-only store only gets the
// catalog record, with a warning) and the catalog.
void record_damage(BlobStore& store, Catalog& catalog, const BackupRecord& b, const std::string& reason);

// Clears a damage record of `b` after a full verification passed.
void clear_damage(BlobStore& store, Catalog& catalog, const BackupRecord& b);

// The newest backup older than `b` that `latest` could be (restore/resolve.h why_not_latest;
// `backups` newest first).
std::optional<BackupRecord> next_intact_candidate(const std::vector<BackupRecord>& backups, const std::string& name);

// For the hint of a failure: how to run the same operation on another backup.
using CommandForBackup = std::function<std::string(const std::string& backup_name)>;

// Runs `work` on backup `b`. When it throws kCorrupt, the damage is recorded and the error is
// rethrown with a hint naming the next intact candidate and, when `command_for` is set, the command
// that uses it.
void with_damage_recorded(BlobStore& store, Catalog& catalog, const BackupRecord& b, const std::function<void()>& work,
                          const CommandForBackup& command_for = nullptr);

}  // namespace etcdadm

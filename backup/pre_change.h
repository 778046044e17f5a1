// The backup a change of a running cluster (an etcdadm upgrade) starts from: a recent one of this
// very cluster when the store has it, else a new one.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "backup/save.h"

namespace etcdadm {

struct PreChangeBackupOptions {
  // A backup of this cluster taken within this long (and not known to be damaged) is used instead
  // of taking a new one; zero always takes a new one.
  std::chrono::seconds max_age{0};
  SaveOptions save;
};

struct PreChangeBackupResult {
  std::string name;
  bool taken = false;               // false: an existing one was recent enough
  std::optional<BackupMeta> saved;  // the new backup's metadata, when taken
};

// The newest backup of cluster `cluster_id` (hex, as backups record it) in the store, not known to
// be damaged and taken within `max_age`; nullopt when there is none (or max_age is zero).
std::optional<BackupRecord> recent_backup_of(BlobStore& store, Catalog& catalog, const std::string& cluster_id,
                                             std::chrono::seconds max_age);

PreChangeBackupResult backup_before_change(EtcdClient& cluster, BlobStore& store, Catalog* catalog,
                                           const PreChangeBackupOptions& options);

}  // namespace etcdadm

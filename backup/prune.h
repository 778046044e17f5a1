// Applying a retention policy to a store: `etcdadm backup prune`, and (later) the sidecar after
// each successful backup. The plan comes from backup/retention.h; this file deletes.
//
// A backup is deleted marker first: the files that make it complete (`_etcd_backup.meta`, then
// `etcdadm-backup.json`) go before the data file, so a prune interrupted half-way leaves a
// directory that readers already ignore (and the next prune removes), never a listed backup
// without its data. On a versioned bucket, what was deleted stays as noncurrent versions unless
// purged (VersionedBlobs::purge_noncurrent_versions), which a prune does last by default.
#pragma once

#include <string>
#include <vector>

#include "backup/retention.h"
#include "store/blob_capabilities.h"
#include "store/blob_store.h"
#include "store/catalog.h"

namespace etcdadm {

struct PruneResult {
  RetentionPlan plan;
  std::vector<std::string> deleted;            // empty on a dry run
  std::vector<std::string> leftovers_removed;  // directories without _etcd_backup.meta, cleaned up
  // Backups the policy would delete but the store keeps from deletion (BlobLocks::lock_of):
  // kept, with "kept until <time> (<why>)", and their change log with them.
  std::vector<std::pair<std::string, std::string>> locked;
  // Change log segments no kept backup needs (wholly at or below the oldest kept backup's
  // revision of their cluster, or of a cluster with no kept backup): deleted, or on a dry run,
  // what would be.
  std::vector<std::string> segments_removed;
  // The late-window markers beside those segments (changelog/segment.h LateWindow), by the same rule.
  std::vector<std::string> late_markers_removed;
  // Versioned buckets: the noncurrent versions and delete markers removed (or left) afterwards.
  VersionedBlobs::Purge versions;
  bool dry_run = false;
};

struct PruneOptions {
  bool dry_run = false;
  // Leave what a versioned bucket keeps of deleted and overwritten files to the bucket's own
  // lifecycle rule (NoncurrentVersionExpiration / daysSinceNoncurrentTime) instead of purging it.
  bool keep_noncurrent_versions = false;
  // Prune although no whole backup younger than the policy's shortest period would be left
  // (--allow-no-recent-backup); refused otherwise (backup/retention.h).
  bool allow_no_recent_backup = false;
};

// Plans (and unless dry_run, applies) `policy` at time `now`. Each listed backup's metadata is read
// (through the catalog when given) to tell whole backups from entries that only look like one
// (backup/retention.h); a plan that deletes anything without leaving a whole backup younger than
// the policy's shortest period is refused (kInvalidArgument) unless allowed. Change log segments are kept exactly
// as long as a kept backup they extend (docs/store-format.md §8). Directories that hold files but no
// `_etcd_backup.meta` (earlier interrupted prunes) are removed too when not dry-running and older
// than the newest backup. Then, unless kept, every noncurrent version under the store's root is
// purged. The catalog, when given, is synced afterwards.
PruneResult prune_backups(BlobStore& store, Catalog* catalog, const RetentionPolicy& policy, SystemTime now,
                          const PruneOptions& options = {});

}  // namespace etcdadm

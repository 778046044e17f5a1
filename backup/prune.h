// Applying a retention policy to a store: `etcdadm backup prune`, and (later) the sidecar after
// each successful backup. The plan comes from backup/retention.h; this file deletes.
//
// A backup is deleted marker first: `_etcd_backup.meta` goes before the data and metadata files,
// so a prune interrupted half-way leaves a directory that readers already ignore (and the next
// prune removes), never a listed backup without its data.
#pragma once

#include <string>
#include <vector>

#include "backup/retention.h"
#include "store/blob_store.h"
#include "store/catalog.h"

namespace etcdadm {

struct PruneResult {
  RetentionPlan plan;
  std::vector<std::string> deleted;  // empty on a dry run
  std::vector<std::string> leftovers_removed;  // directories without _etcd_backup.meta, cleaned up
  // Change log segments no kept backup needs (wholly at or below the oldest kept backup's
  // revision of their cluster, or of a cluster with no kept backup): deleted, or on a dry run,
  // what would be.
  std::vector<std::string> segments_removed;
  bool dry_run = false;
};

// Plans (and unless dry_run, applies) `policy` at time `now`. Change log segments are kept exactly
// as long as a kept backup they extend (docs/store-format.md §8). Directories that hold files but no
// `_etcd_backup.meta` (earlier interrupted prunes) are removed too when not dry-running and older
// than the newest backup. The catalog, when given, is synced afterwards.
PruneResult prune_backups(BlobStore& store, Catalog* catalog, const RetentionPolicy& policy, SystemTime now,
                          bool dry_run);

}  // namespace etcdadm

#include "backup/pre_change.h"

#include <spdlog/spdlog.h>

#include "backup/member_select.h"
#include "common/timefmt.h"

namespace etcdadm {

std::optional<BackupRecord> recent_backup_of(BlobStore& store, Catalog& catalog, const std::string& cluster_id,
                                             std::chrono::seconds max_age) {
  if (max_age.count() <= 0) return std::nullopt;
  catalog.sync(store);
  const int64_t oldest = to_unix_micros(std::chrono::system_clock::now() - max_age);
  for (const auto& b : catalog.backups(store.url())) {  // newest first
    if (b.damage || b.cluster_id != cluster_id || b.taken_at_micros < oldest) continue;
    return b;
  }
  return std::nullopt;
}

PreChangeBackupResult backup_before_change(EtcdClient& cluster, BlobStore& store, Catalog* catalog,
                                           const PreChangeBackupOptions& options) {
  PreChangeBackupResult r;
  if (options.max_age.count() > 0 && catalog != nullptr) {
    // Only a backup of this cluster counts: a store may hold several clusters' backups.
    const std::string cluster_id = id_hex(cluster.member_list().header().cluster_id());
    if (auto b = recent_backup_of(store, *catalog, cluster_id, options.max_age)) {
      spdlog::info("backup {} of this cluster is recent enough (younger than {} s): no new backup", b->name,
                   options.max_age.count());
      r.name = b->name;
      return r;
    }
    spdlog::info("no backup of cluster {} younger than {} s in {}: taking one", cluster_id, options.max_age.count(),
                 store.url());
  }
  SaveOptions save = options.save;
  save.attempt_origin = "pre-change";
  r.saved = save_backup(cluster, store, catalog, save).meta;
  r.name = r.saved->name;
  r.taken = true;
  return r;
}

}  // namespace etcdadm

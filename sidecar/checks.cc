#include "sidecar/checks.h"

#include "restore/backup_copy.h"
#include "restore/damage.h"
#include "restore/resolve.h"
#include "restore/verify.h"

namespace etcdadm {

std::function<void(const std::string& name)> verify_after_backup(BackupStore store, Catalog& catalog) {
  return [store, &catalog](const std::string& name) {
    BackupRecord b = find_backup(*store, catalog, name);
    with_damage_recorded(*store, catalog, b,
                         [&] { verify_to_depth(store, b, reachable_depth(store, b, VerifyDepth::kHashes), &catalog); });
  };
}

std::function<DrillOutcome(const std::string& name, const std::atomic<bool>* cancel)> drill_backup(
    BackupStore store, Catalog& catalog, DrillOptions options) {
  return [store, &catalog, options](const std::string& name, const std::atomic<bool>* cancel) {
    DrillOptions with_cancel = options;
    with_cancel.cancel = cancel;
    BackupRecord b = find_backup(*store, catalog, name);
    DrillReport r = run_drill(store, b, with_cancel);
    record_drill_result(*store, &catalog, b, r);
    return DrillOutcome{r.passed, r.rto_seconds, r.passed ? "" : error_kind_name(r.failure_kind), r.failure};
  };
}

std::function<CopyOutcome()> copy_new_backups_to(BackupStore from, Catalog& catalog, BlobStore& to) {
  return [from, &catalog, &to] {
    CopyResult r = copy_new_backups(from, catalog, to);
    CopyOutcome c;
    for (const auto& b : r.backups) c.copied += b.copied ? 1 : 0;
    c.damaged = r.damaged;
    return c;
  };
}

}  // namespace etcdadm

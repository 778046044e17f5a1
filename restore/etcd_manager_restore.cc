#include "restore/etcd_manager_restore.h"

#include "common/error.h"
#include "restore/fetch.h"
#include "restore/resolve.h"

namespace etcdadm {

namespace {

void refuse_what_etcd_manager_cannot_restore(BlobStore& store, const BackupRecord& b) {
  // One listing and this backup's metadata: not every backup's.
  std::optional<EtcdManagerListing> listing;
  for (const auto& l : scan_backups(store)) {
    if (l.name == b.name) listing = etcd_manager_listing(store, l);
  }
  const char* instead =
      "restore it with etcdadm instead (`etcdadm init --from-backup` or `etcdadm backup restore`, docs/operations.md), "
      "or pick a backup that `etcdadm etcd-manager list-backups` shows as restorable";
  if (!listing) {
    auto why = etcd_manager_restore_blocker(b);
    throw Error(ErrorKind::kInvalidArgument,
                "etcd-manager does not list backup " + b.name + ": " + why.value_or("it has no _etcd_backup.meta"),
                instead);
  }
  if (listing->blocker) {
    throw Error(ErrorKind::kInvalidArgument,
                "etcd-manager could not restore backup " + b.name + ": " + *listing->blocker +
                    " (it would create an empty cluster first, then fail)",
                instead);
  }
}

}  // namespace

QueuedEtcdManagerRestore queue_etcd_manager_restore(BlobStore& store, Catalog& catalog,
                                                    const EtcdManagerRestoreRequest& request) {
  const auto& over = request.into_overrides;
  auto spec = read_etcd_manager_cluster_spec(store);
  if (!spec && (over.member_count == 0 || over.etcd_version.empty())) {
    throw Error(
        ErrorKind::kNotFound,
        "no etcd-manager cluster spec in " + store.url() + " (" + kEtcdManagerClusterSpecKey + ")",
        "is --store the store etcd-manager backs up to (kops: s3://BUCKET/CLUSTER/backups/etcd/main)? To restore "
        "into a cluster etcd-manager has not seen, give --member-count and --etcd-version");
  }
  QueuedEtcdManagerRestore out;
  out.into = spec.value_or(EtcdManagerClusterSpec{});
  if (over.member_count != 0) out.into.member_count = over.member_count;
  if (!over.etcd_version.empty()) out.into.etcd_version = over.etcd_version;

  BackupRecord b = find_backup(store, catalog, request.query);
  out.backup = b.name;
  out.etcdadm_restores = request.etcdadm_restores;
  if (!request.etcdadm_restores) refuse_what_etcd_manager_cannot_restore(store, b);
  for (const auto& pending : list_etcd_manager_commands(store)) {
    if (!pending.restore_backup) continue;
    throw Error(ErrorKind::kAlreadyExists,
                "a restore is queued already: " + pending.key + " restores " + pending.restore_backup->backup,
                "remove it first: `etcdadm etcd-manager delete-command " + pending.restore_backup->backup + "`");
  }
  if (request.verify && !(request.etcdadm_restores && b.encrypted())) {
    // No keys: etcd-manager cannot read an encrypted backup, which the blocker above has refused;
    // etcdadm's controllers verify one with their keys before they stop anything.
    with_damage_recorded(
        store, catalog, b, [&] { out.db_sha256 = verify_backup(BackupStore(store), b).digest.db_sha256; },
        request.command_for);
    out.verified = true;
  }
  EtcdManagerCommand cmd;
  cmd.restore_backup = EtcdManagerRestoreCommand{out.into, b.name};
  out.command_key = add_etcd_manager_command(store, cmd, std::chrono::system_clock::now());
  return out;
}

}  // namespace etcdadm

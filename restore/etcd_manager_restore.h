// `etcdadm etcd-manager restore-backup`: queue a restore for etcd-manager (kops) as etcd-manager-ctl
// does, but only of a backup etcd-manager lists, can restore and that streams intact: etcd-manager
// creates a new, empty cluster before it downloads the backup, so any failure after that point
// leaves the control plane empty.
#pragma once

#include <string>

#include "restore/damage.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/etcd_manager.h"

namespace etcdadm {

struct EtcdManagerRestoreRequest {
  std::string query;                      // a backup name, `latest`, a prefix or a time
  EtcdManagerClusterSpec into_overrides;  // fields set here replace the store's cluster spec
  bool verify = true;                     // stream the backup and check every hash first
  CommandForBackup command_for;           // hint after a damaged backup
  // The store's hosts run `etcdadm auto` (its spec is in etcdadm-auto/), not etcd-manager: the
  // controllers restore natively, so etcd-manager's limits (gzip in the clear, etcd up to 3.6, its
  // hash trailer, _etcd_backup.meta) do not apply. An encrypted backup is verified by each host as
  // it fetches it, with its keys, before anything is stopped.
  bool etcdadm_restores = false;
};
struct QueuedEtcdManagerRestore {
  std::string backup;
  EtcdManagerClusterSpec into;
  std::string command_key;
  bool verified = false;
  std::string db_sha256;  // the verified db's SHA-256 ("" when not verified)
  bool etcdadm_restores = false;
};

// Throws kNotFound without a cluster spec (unless both overrides are given), kInvalidArgument for
// a backup etcd-manager would not list or could not restore, kCorrupt (recorded as damage) for a
// damaged one, kAlreadyExists when a restore is queued already.
QueuedEtcdManagerRestore queue_etcd_manager_restore(BlobStore& store, Catalog& catalog,
                                                    const EtcdManagerRestoreRequest& request);

}  // namespace etcdadm

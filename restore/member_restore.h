// Restores that start a new cluster's first member (`etcdadm init --snapshot FILE` and
// `etcdadm init --from-backup NAME --store URL`): the lifecycle's snapshot phase calls one of these
// with the member it is creating, so the data dir is restored with exactly that member's name,
// peer URL and a fresh cluster token, for the etcd version just installed for it: natively, or with
// that install's etcdutl/etcdctl when the RestoreMethod asks for a tool.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "etcdadm/lifecycle/init_join.h"
#include "restore/data_dir.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/layout.h"

namespace etcdadm {

// From a snapshot file (its SHA-256 trailer checked first unless skip_hash_check). Throws
// kInvalidArgument now, before anything is installed, when etcd `target_version` ("" = not known)
// may not start on it (snapshot_version.h).
// `method`: native (default) or the member's own etcd tool, and the revision bump.
SnapshotRestorer snapshot_file_restorer(std::string snapshot_file, bool skip_hash_check,
                                        const std::string& target_version, const RestoreMethod& method);

// From a backup in a store, fetched and verified (stored-bytes hash, decompression, snapshot
// SHA-256) *now*, before the lifecycle installs etcd or issues a certificate: a damaged backup
// throws kCorrupt here and costs nothing else. The verified copy waits in a private directory
// beside `data_dir` (same filesystem, room for the db) until the restorer runs, which restores
// from it without reading the backup again; the copy goes with the last copy of the restorer.
// A backup that etcd `target_version` may not start on is refused then too (kInvalidArgument).
// With a point in time (native restores only), the backup's change log is replayed onto the
// verified copy then too, every segment checked as it is read: nothing is installed before the
// whole log the target needs has been read and found intact.
// The same fetch, verification and replay, for a caller that says where and as which member: the
// returned function restores the verified copy with `options` (its method and recorded version
// set here), once.
using PrefetchedBackup = std::function<RestoreResult(RestoreOptions options)>;
PrefetchedBackup prefetch_backup(const BackupStore& store, const BackupRecord& backup, const std::string& data_dir,
                                 const std::string& target_version, const RestoreMethod& method,
                                 const PointInTime& point_in_time = {});
SnapshotRestorer prefetched_backup_restorer(const BackupStore& store, const BackupRecord& backup,
                                            const std::string& data_dir, const std::string& target_version,
                                            const RestoreMethod& method, const PointInTime& point_in_time = {});

}  // namespace etcdadm

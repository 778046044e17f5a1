// Restoring a verified snapshot into an etcd data directory: natively by default (etcdadm writes
// the member's db, WAL and raft snapshot itself: native_restore.h), or with etcd's own tool
// (`etcdutl snapshot restore` for 3.5+, `ETCDCTL_API=3 etcdctl snapshot restore` for 3.4) when
// asked. All work happens in a staging directory on the target's filesystem (beside the target, or
// inside it when the target is a filesystem root: a data dir on its own disk); the target is
// replaced by a rename only after everything succeeded, so a failed restore never leaves a
// half-restored data dir.
#pragma once

#include <string>

#include "restore/pitr.h"
#include "restore/restore_method.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/layout.h"

namespace etcdadm {

struct RestoreOptions {
  std::string data_dir;
  std::string name = "default";
  std::string initial_cluster;  // default: <name>=<first advertise peer URL>
  std::string initial_advertise_peer_urls = "http://localhost:2380";
  std::string initial_cluster_token = "etcd-cluster";
  bool force = false;  // replace a non-empty data dir
  RestoreMethod method;
  std::string restore_tool;  // path to etcdutl/etcdctl (implies a tool restore); default: the one on PATH
  // The etcd the restored member will run ("" = the restore tool's version; natively: the etcd
  // first on PATH, else the snapshot's) and the one the
  // backup's metadata names ("" = unknown: the db tells). A restore that etcd does not support
  // across these versions is refused before the data dir is touched (snapshot_version.h).
  std::string target_version;
  std::string snapshot_etcd_version;
  // Point-in-time (restore/pitr.h): the change log replayed onto the snapshot up to this target
  // (native restores of store backups only).
  PointInTime point_in_time;
};

// A restore's private directory on the data dir's filesystem, `<parent>/.etcdadm-restore-<random>`
// (restore_staging_parent), so that the result moves into place by renames. A lock file in it stays flock()ed
// while it lives; it is removed however the work ends (an exception, SIGINT/SIGTERM). One left by
// a run that could not clean up (kill -9, power loss) is removed by the next restore into the same
// parent; one whose lock is held never is.
class StagingDir {
 public:
  explicit StagingDir(const std::string& parent);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int lock_fd_ = -1;
};

// The data dir a restore writes: `data_dir` made absolute, and when it is a symlink to a
// directory (/var/lib/etcd -> /data/etcd), the directory it points to.
std::string resolved_data_dir(const std::string& data_dir);

// Where a restore into `data_dir` stages its work, on the data dir's filesystem: beside it (its
// parent, created if missing), or inside it when it is a filesystem root, which no rename can
// replace and no rename from beside it can reach.
std::string restore_staging_parent(const std::string& data_dir);

struct RestoreTool {
  std::string path;
  bool is_etcdutl = false;
  std::string version;  // as the tool reports it
};

// Finds the tool to restore with (explicit path first). Throws kNotFound with an install hint.
RestoreTool find_restore_tool(const std::string& explicit_path);

struct RestoreResult {
  std::string backup_name;
  std::string data_dir;
  uint64_t db_size = 0;
  bool native = false;
  RestoreTool tool;  // when !native
  // Natively: the new member's and cluster's IDs, the snapshot's newest revision and the member's
  // revision after a bump (the same without one).
  uint64_t member_id = 0;
  uint64_t cluster_id = 0;
  int64_t snapshot_revision = 0;
  int64_t revision = 0;
  // What was done to the revision and why (restore_method.h). A tool restore that was not asked to
  // bump reads the snapshot for Kubernetes' keys before it runs, so this is set for it too.
  RevisionBump revision_bump;
  std::string flavor;                  // natively: the etcd version whose restore output was written
  std::optional<ReplayResult> replay;  // a point-in-time restore: what the change log added
  double fetch_seconds = 0;
  double restore_seconds = 0;
};

RestoreResult restore_to_data_dir(const BackupStore& backups, const BackupRecord& backup,
                                  const RestoreOptions& options);

// The same from a snapshot file on disk (`etcdadm init --snapshot`): the file's SHA-256 trailer is
// checked first (a db without trailer is accepted only with skip_hash_check), then restored
// without copying it.
RestoreResult restore_snapshot_file(const std::string& snapshot_file, const RestoreOptions& options,
                                    bool skip_hash_check);

// The same for a snapshot file that etcdadm itself has just fetched and verified (fetch_verified):
// no second read to check it. `consume`: the file is a scratch copy the native restore may move
// into the data dir instead of copying it (it is gone afterwards).
RestoreResult restore_verified_snapshot_file(const std::string& snapshot_file, uint64_t db_bytes,
                                             const RestoreOptions& options, bool consume = false);

}  // namespace etcdadm

#include "restore/member_restore.h"

#include <spdlog/spdlog.h>

#include "common/fs.h"
#include "etcdadm/release.h"
#include "restore/data_dir.h"
#include "restore/fetch.h"

#include <chrono>

namespace etcdadm {

namespace {

RestoreOptions member_restore_options(const MemberConfig& m, const ClusterBootstrap& b) {
  RestoreOptions o;
  o.data_dir = m.data_dir;
  o.name = m.name;
  o.initial_cluster = b.initial_cluster;
  o.initial_advertise_peer_urls = m.peer_url();
  o.initial_cluster_token = b.token;
  // The tools that came with the member's etcd: etcdutl (3.5+) or etcdctl (3.4). An etcdutl left
  // in the install dir by another version is not used for this member's data.
  std::string etcdutl = m.install_dir + "/etcdutl";
  bool etcdutl_fits = path_exists(etcdutl) && (m.version.empty() || binary_version(etcdutl) == m.version);
  o.restore_tool = etcdutl_fits ? etcdutl : m.etcdctl_binary();
  return o;
}

}  // namespace

SnapshotRestorer snapshot_file_restorer(std::string snapshot_file, bool skip_hash_check) {
  return [snapshot_file, skip_hash_check](const MemberConfig& m, const ClusterBootstrap& b) {
    auto r = restore_snapshot_file(snapshot_file, member_restore_options(m, b), skip_hash_check);
    spdlog::info("restored snapshot {} ({} bytes db) with {} {}", snapshot_file, r.db_size, r.tool.path,
                 r.tool.version);
  };
}

SnapshotRestorer prefetched_backup_restorer(BlobStore& store, const BackupRecord& backup, const std::string& data_dir) {
  std::string parent = parent_dir(absolute_path(data_dir));
  make_dirs(parent);
  // A staging dir of its own: locked, so the restore's clean-up of abandoned ones leaves it alone
  // however long the install before the restore takes, and removes it after a killed init.
  auto scratch = std::make_shared<StagingDir>(parent);
  std::string snapshot = scratch->path() + "/snapshot.db";
  auto t0 = std::chrono::steady_clock::now();
  FetchResult fetched = fetch_verified(store, backup, snapshot, /*overwrite=*/false, /*durable=*/false);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("backup {} fetched and verified ({} bytes db, SHA-256 {}) in {:.2f}s", backup.name,
               fetched.digest.db_bytes, fetched.digest.db_sha256, seconds);
  uint64_t db_bytes = fetched.digest.db_bytes;
  std::string name = backup.name;
  return [scratch, snapshot, db_bytes, name](const MemberConfig& m, const ClusterBootstrap& b) {
    auto r = restore_verified_snapshot_file(snapshot, db_bytes, member_restore_options(m, b));
    spdlog::info("restored backup {} ({} bytes db) with {} {}", name, r.db_size, r.tool.path, r.tool.version);
  };
}

}  // namespace etcdadm

#include "restore/member_restore.h"

#include <spdlog/spdlog.h>

#include "common/fs.h"
#include "etcdadm/release.h"
#include "restore/data_dir.h"

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

SnapshotRestorer backup_restorer(std::shared_ptr<BlobStore> store, BackupRecord backup) {
  return [store, backup](const MemberConfig& m, const ClusterBootstrap& b) {
    auto r = restore_to_data_dir(*store, backup, member_restore_options(m, b));
    spdlog::info("restored backup {} ({} bytes db, fetched and verified in {:.2f}s) with {} {}", backup.name, r.db_size,
                 r.fetch_seconds, r.tool.path, r.tool.version);
  };
}

}  // namespace etcdadm

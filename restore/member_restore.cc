#include "restore/member_restore.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "etcd/datadir/snapshot_version.h"
#include "etcdadm/release/install.h"
#include "restore/data_dir.h"
#include "restore/fetch.h"
#include "restore/native_restore.h"

namespace etcdadm {

namespace {

RestoreOptions member_restore_options(const MemberConfig& m, const ClusterBootstrap& b,
                                      const std::string& snapshot_version, const RestoreMethod& method) {
  RestoreOptions o;
  o.method = method;
  o.target_version = m.version;
  o.snapshot_etcd_version = snapshot_version;
  o.data_dir = m.data_dir;
  o.name = m.name;
  o.initial_cluster = b.initial_cluster;
  o.initial_advertise_peer_urls = m.peer_url();
  o.initial_cluster_token = b.token;
  if (method.native()) return o;
  // The tools that came with the member's etcd: etcdutl (3.5+) or etcdctl (3.4). An etcdutl left
  // in the install dir by another version is not used for this member's data.
  std::string etcdutl = m.install_dir + "/etcdutl";
  bool etcdutl_fits = path_exists(etcdutl) && (m.version.empty() || binary_version(etcdutl) == m.version);
  o.restore_tool = etcdutl_fits ? etcdutl : m.etcdctl_binary();
  return o;
}

// Refuses, before anything is installed, a native restore for an etcd it is not verified for.
void check_method(const RestoreMethod& method, const std::string& target_version) {
  check_revision_flags(method);
  auto target = EtcdVersion::parse(target_version);
  if (method.native() && target && !native_restore_verified(*target)) {
    throw Error(ErrorKind::kInvalidArgument,
                "the native restore writes data dirs for etcd " + native_restore_verified_versions() +
                    ", not for etcd " + target->str(),
                "add --restore-with etcdutl: the restore then uses the etcdutl installed with etcd " + target->str());
  }
}

// Refuses, before anything is installed, a snapshot that etcd `target_version` may not start on.
void check_fits(const std::string& snapshot, const std::string& recorded, const std::string& target_version) {
  auto target = EtcdVersion::parse(target_version);
  auto origin = snapshot_origin(snapshot, recorded);
  if (target && origin) check_restore_target(*origin, *target, /*tool_version=*/"");
}

std::string how(const RestoreResult& r) {
  return r.native ? "natively for etcd " + r.flavor + " (revision " + std::to_string(r.revision) + ")"
                  : "with " + r.tool.path + " " + r.tool.version;
}

}  // namespace

SnapshotRestorer snapshot_file_restorer(std::string snapshot_file, bool skip_hash_check,
                                        const std::string& target_version, const RestoreMethod& method) {
  check_method(method, target_version);
  check_fits(snapshot_file, "", target_version);
  return [snapshot_file, skip_hash_check, method](const MemberConfig& m, const ClusterBootstrap& b) {
    auto r = restore_snapshot_file(snapshot_file, member_restore_options(m, b, "", method), skip_hash_check);
    spdlog::info("restored snapshot {} ({} bytes db) {}", snapshot_file, r.db_size, how(r));
    return r.revision;
  };
}

PrefetchedBackup prefetch_backup(const BackupStore& store, const BackupRecord& backup, const std::string& data_dir,
                                 const std::string& target_version, const RestoreMethod& method,
                                 const PointInTime& point_in_time) {
  check_method(method, target_version);
  if (point_in_time.given() && !method.native()) {
    throw Error(ErrorKind::kInvalidArgument,
                "a point-in-time restore is native: etcd's tools cannot replay the change log", "drop --restore-with");
  }
  if (auto target = EtcdVersion::parse(target_version)) refuse_newer_recorded_version(backup.etcd_version, *target);
  std::string parent = restore_staging_parent(resolved_data_dir(data_dir));
  // A staging dir of its own: locked, so the restore's clean-up of abandoned ones leaves it alone
  // however long the install before the restore takes, and removes it after a killed init.
  auto scratch = std::make_shared<StagingDir>(parent);
  std::string snapshot = scratch->path() + "/snapshot.db";
  auto t0 = std::chrono::steady_clock::now();
  FetchResult fetched = fetch_verified(store, backup, snapshot, /*overwrite=*/false, /*durable=*/false);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("backup {} fetched and verified ({} bytes db, SHA-256 {}) in {:.2f}s", backup.name,
               fetched.digest.db_bytes, fetched.digest.db_sha256, seconds);
  check_fits(snapshot, backup.etcd_version, target_version);
  uint64_t db_bytes = fetched.digest.db_bytes;
  if (point_in_time.given()) {
    ReplayResult replayed = replay_to(store, backup, snapshot, db_bytes, point_in_time);
    db_bytes = std::filesystem::file_size(snapshot);  // the replay leaves the database alone, without the trailer
    spdlog::info("backup {} brought to revision {} by its change log ({} revisions)", backup.name, replayed.revision,
                 replayed.records);
  }
  std::string name = backup.name;
  std::string recorded = backup.etcd_version;
  return [scratch, snapshot, db_bytes, name, recorded, method](RestoreOptions o) {
    o.method = method;
    o.snapshot_etcd_version = recorded;
    // The scratch copy is moved into the data dir (same filesystem): no second 400 MB write.
    auto r = restore_verified_snapshot_file(snapshot, db_bytes, o, /*consume=*/true);
    spdlog::info("restored backup {} ({} bytes db) {}", name, r.db_size, how(r));
    return r;
  };
}

SnapshotRestorer prefetched_backup_restorer(const BackupStore& store, const BackupRecord& backup,
                                            const std::string& data_dir, const std::string& target_version,
                                            const RestoreMethod& method, const PointInTime& point_in_time) {
  PrefetchedBackup restore = prefetch_backup(store, backup, data_dir, target_version, method, point_in_time);
  return [restore, recorded = backup.etcd_version, method](const MemberConfig& m, const ClusterBootstrap& b) {
    return restore(member_restore_options(m, b, recorded, method)).revision;
  };
}

}  // namespace etcdadm

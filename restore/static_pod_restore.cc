#include "restore/static_pod_restore.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "common/error.h"
#include "common/failpoint.h"
#include "common/file_users.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "etcd/client.h"
#include "etcd/etcd_version.h"
#include "etcdadm/static_pod.h"
#include "restore/member_restore.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::string parked_manifest_path(const std::string& manifest) {
  const std::filesystem::path p(manifest);
  return (p.parent_path().parent_path() / (p.filename().string() + ".etcdadm-restoring")).string();
}

StaticPodRestoreResult restore_static_pod_member(const BackupStore& store, const BackupRecord& backup,
                                                 const StaticPodRestoreOptions& o) {
  StaticPodRestoreResult r;
  r.manifest = o.manifest;
  const std::string parked = parked_manifest_path(o.manifest);
  const bool live = path_exists(o.manifest), waiting = path_exists(parked);
  if (live && waiting) {
    throw Error(ErrorKind::kAlreadyExists,
                "both " + o.manifest + " and " + parked + " (parked by an earlier restore) exist",
                "remove the one that is not the member's current manifest, then restore again");
  }
  if (!live && !waiting) {
    throw Error(ErrorKind::kNotFound, o.manifest + " does not exist (nor a parked copy at " + parked + ")");
  }
  r.resumed = waiting;
  const StaticPodEtcd pod = read_static_pod_etcd(live ? o.manifest : parked);
  if (pod.initial_advertise_peer_urls.empty()) {
    throw Error(ErrorKind::kCorrupt, o.manifest + ": the etcd command has no --initial-advertise-peer-urls");
  }
  RestoreOptions into;
  into.data_dir = pod.data_dir;
  into.name = pod.name;
  into.initial_advertise_peer_urls = pod.initial_advertise_peer_urls.front();
  into.initial_cluster =
      o.initial_cluster.empty() ? pod.name + "=" + into.initial_advertise_peer_urls : o.initial_cluster;
  into.initial_cluster_token =
      o.initial_cluster_token.empty() ? "etcdadm-restored-" + random_hex(8) : o.initial_cluster_token;
  into.target_version = o.target_version.empty() ? image_version(pod.image) : o.target_version;

  // 1. While etcd serves: a backup that is missing or damaged fails here.
  PrefetchedBackup restore =
      prefetch_backup(store, backup, pod.data_dir, into.target_version, o.method, o.point_in_time);

  // 2. The kubelet stops etcd once its manifest is gone from the directory it reads.
  if (live) {
    rename_durably(o.manifest, parked);
    spdlog::info("moved {} to {}: the kubelet stops etcd", o.manifest, parked);
    failpoint("kubeadm-restore/parked");
  }
  if (!wait_until_released(pod.data_dir, o.stop_timeout)) {
    const std::string holders = holders_of(pod.data_dir);
    rename_durably(parked, o.manifest);
    throw Error(ErrorKind::kTimeout,
                "etcd did not stop within " + std::to_string(o.stop_timeout.count()) + " s of its manifest leaving " +
                    std::filesystem::path(o.manifest).parent_path().string() + " (" + holders +
                    " still hold files in " + pod.data_dir + "); the manifest is back, nothing was changed",
                "is the kubelet running, and is that its static pod directory?");
  }

  // 3. The old data kept for a person, the backup in its place.
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  r.set_aside = set_aside_data_dir(
      pod.data_dir, "restore-" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count()));
  if (!r.set_aside.empty()) spdlog::info("the member's old data is kept in {}", r.set_aside);
  r.restored = restore(into);
  failpoint("kubeadm-restore/restored");

  // 4. The kubelet starts etcd on the restored data.
  rename_durably(parked, o.manifest);
  spdlog::info("moved the manifest back to {}: the kubelet starts etcd on the restored data", o.manifest);
  try {
    EtcdClient client(pod.connection());
    for (const auto until = Clock::now() + o.serving_timeout; Clock::now() < until;) {
      try {
        const auto st = client.status(pod.local_client_url());
        r.serving = true;
        r.has_leader = st.leader() != 0;
        if (r.has_leader) break;
      } catch (const Error&) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  } catch (const Error& e) {
    spdlog::warn("cannot ask the restored member: {}", e.what());
  }
  return r;
}

}  // namespace etcdadm

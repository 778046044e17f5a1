// Restoring a member the kubelet runs from a static pod manifest (kubeadm's stacked etcd), as
// kubeadm's own runbook does it by hand, in one command (`etcdadm backup restore NAME
// --kubeadm-manifest /etc/kubernetes/manifests/etcd.yaml`):
//   1. the backup fetched and verified (and its change log replayed) while etcd still serves: a
//      missing or damaged backup costs nothing;
//   2. the manifest moved out of the kubelet's directory (parked beside that directory as
//      <file>.etcdadm-restoring), and the wait until no process holds the data dir (the kubelet
//      stopped etcd); when it does not stop in time the manifest goes back and nothing changed;
//   3. the old data set aside (<data-dir>.set-aside-restore-<unix>, kept for a person), the backup
//      restored into the data dir as the manifest's member (its --name, its peer URL);
//   4. the manifest moved back (the kubelet starts etcd on the restored data), and the wait until
//      the member answers.
// Killed anywhere, the same command again finishes it: with the manifest parked it carries on from
// the parked copy. Failpoints kubeadm-restore/parked and kubeadm-restore/restored.
#pragma once

#include <chrono>
#include <string>

#include "restore/data_dir.h"
#include "store/backup_store.h"

namespace etcdadm {

struct StaticPodRestoreOptions {
  std::string manifest;  // in the kubelet's static pod directory (parked beside it meanwhile)
  // The restored cluster: default a cluster of one, the manifest's --name at its first
  // --initial-advertise-peer-urls, and a fresh token. Every member of a stacked cluster restored
  // from one backup is given the same initial cluster and token.
  std::string initial_cluster;
  std::string initial_cluster_token;
  RestoreMethod method;
  PointInTime point_in_time;
  std::string target_version;                 // default: the version of the manifest's image tag (3.7.0-0 -> 3.7.0)
  std::chrono::seconds stop_timeout{120};     // for the kubelet to stop etcd (its grace is 30 s): --stop-timeout
  std::chrono::seconds serving_timeout{120};  // for the restored member to answer
};

struct StaticPodRestoreResult {
  RestoreResult restored;
  std::string manifest;
  std::string set_aside;  // where the old data went ("" when there was none)
  bool resumed = false;   // an earlier run had parked the manifest
  bool serving = false;   // the restored member answered within serving_timeout
  bool has_leader = false;
};

// Where the manifest waits while its member is restored: beside the kubelet's directory, which
// the kubelet does not read.
std::string parked_manifest_path(const std::string& manifest);

StaticPodRestoreResult restore_static_pod_member(const BackupStore& store, const BackupRecord& backup,
                                                 const StaticPodRestoreOptions& options);

}  // namespace etcdadm

// etcdadm reset: takes this host's member away (out of the membership, stopped, its data and
// files deleted); every step tolerates what an earlier, interrupted reset already did.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "etcdadm/member_config.h"

namespace etcdadm {

struct ResetOptions {
  MemberConfig member;                 // from the state file when it exists
  bool skip_remove_member = false;     // etcdadm's flag: leave the cluster membership alone
  bool force = false;                  // also reset the last voting member (the cluster's data goes)
  bool remove_ca = false;              // delete ca.crt/ca.key too
  bool remove_binaries = false;        // delete etcd/etcdctl/etcdutl (and the releases upgrade kept) from install-dir
  bool keep_data = false;              // set the data dir aside (common/fs.h set_aside_data_dir), not deleted
  std::vector<std::string> endpoints;  // other members to reach the cluster through when this one is down
  std::chrono::milliseconds stop_grace{10000};
};

struct ResetResult {
  bool member_removed = false;  // MemberRemove was done now
  std::vector<std::string> removed_paths;
  std::string data_set_aside;  // --keep-data: where the data dir went
};

// Removes the local member from the cluster (not the last voting one unless forced), stops etcd,
// and deletes the data dir (or sets it aside: keep_data), the config (env files, unit/manifest, state file) and the
// member certificates. Every step tolerates what an earlier, interrupted reset already did.
ResetResult run_reset(const ResetOptions& options);

}  // namespace etcdadm

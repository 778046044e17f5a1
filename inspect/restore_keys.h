// Putting keys from a backup back into a live cluster (`etcdadm backup restore-keys`): the operator
// deleted one Kubernetes object, or a namespace, and wants exactly those keys back without
// restoring the whole cluster. Every write is a Txn whose compares pin the state the plan was
// made from, so a concurrent writer is never overwritten by accident.
//
// Conflict policies, for a key that exists in the cluster with another value:
//   skip-existing   (default) leave it; restore only the keys that are absent
//   overwrite       replace it, but only if it still has the mod revision seen when planning
//   only-if-absent  all or nothing: one Txn restores every key if none of them exists now
// Leases are not carried over (the backup's leases do not exist in the live cluster); the keys are
// written without one and the plan says how many had a lease.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/datadir/snapshot_inspect.h"

namespace etcdadm {

enum class ConflictPolicy { kSkipExisting, kOverwrite, kOnlyIfAbsent };
ConflictPolicy parse_conflict_policy(const std::string& name);  // throws kInvalidArgument
const char* conflict_policy_name(ConflictPolicy policy);

struct KeyAction {
  enum class Kind { kCreate, kUpdate, kSkip, kUnchanged };
  Kind kind = Kind::kCreate;
  std::string key;
  int64_t live_mod_revision = 0;  // 0: absent in the cluster when planned
  bool had_lease = false;
  // After applying: false when the cluster changed under us (the Txn's compare failed).
  bool applied = false;
};
const char* key_action_name(KeyAction::Kind kind);

struct RestoreKeysOptions {
  ConflictPolicy policy = ConflictPolicy::kSkipExisting;
  bool dry_run = false;
  size_t max_txn_ops = 128;  // etcd's --max-txn-ops default
};

struct RestoreKeysResult {
  std::vector<KeyAction> actions;  // in key order
  uint64_t created = 0, updated = 0, skipped = 0, unchanged = 0;
  uint64_t conflicts = 0;  // planned writes refused because the key changed meanwhile
  uint64_t leases_dropped = 0;
  int64_t planned_at_revision = 0;
};

RestoreKeysResult restore_keys(EtcdClient& client, const std::vector<SnapshotKeyValue>& from_backup,
                               const RestoreKeysOptions& options);

}  // namespace etcdadm

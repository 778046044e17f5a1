// What `etcdadm auto status` and `etcdadm seed` show (and what seed and approve-restore write), read from the store
// alone (no member is asked: status works from any machine with the store's credentials, the cluster up or down): the
// spec, whether a cluster was created, the plan, the pause, every host with what it last reported
// (its data, its etcd, what it waits for), and the last events.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "controller/record_auth.h"
#include "controller/records.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/etcd_manager.h"

namespace etcdadm {

struct AutoStatus {
  std::string store_url;
  std::optional<EtcdManagerClusterSpec> spec;
  AutoSpec auto_spec;
  std::optional<int64_t> created_nanos;  // etcd-cluster-created (0 inside: no time recorded)
  std::optional<ClusterPlan> plan;
  std::optional<PauseRecord> pause;
  std::optional<VersionTurn> version_turn;      // the last turn of a rolling version change
  MaintenanceRecord maintenance;                // the members' last defrags
  std::optional<CaRotationRecord> ca_rotation;  // the last CA rotation (its hosts' steps are in their records)
  std::vector<EtcdManagerCommand> commands;     // the queue (control/), oldest first
  std::vector<HostRecord> hosts;
  std::vector<std::string> unreadable;  // records that do not parse, and why
  std::vector<AutoEvent> events;        // oldest first
  int64_t now_unix = 0;
};

// Reads everything the controllers share (and the last `events` events).
AutoStatus read_auto_status(BlobStore& store, size_t events);
nlohmann::json auto_status_json(const AutoStatus& status);
std::string auto_status_text(const AutoStatus& status);

// What the controllers will do about a spec changed from `before` to `after`, in a sentence.
std::string seed_effect(const AutoStatus& status, const std::optional<EtcdManagerClusterSpec>& before,
                        const EtcdManagerClusterSpec& after);

// What `etcdadm seed` changes of the controllers' own spec (AutoSpec); nullopt keeps a field.
struct AutoSpecChanges {
  std::optional<int64_t> replace_after_seconds;
  std::optional<int> defrag_free_percent;
  std::optional<int64_t> defrag_min_free_bytes;
  std::optional<std::string> defrag_schedule;  // "" removes the schedule
  std::optional<int64_t> nospace_keep_revisions;
  std::optional<int> nospace_disarm_below_percent;
  std::optional<int64_t> corrupt_check_seconds;  // 0: no check of the members' HashKV
  std::optional<bool> auto_restore;
  std::optional<bool> restart_without_quorum;
  std::optional<bool> recover_quorum;
  std::optional<int64_t> auto_restore_delay_seconds;
  std::optional<int64_t> cert_renew_before_seconds;  // 0: never
  std::optional<int64_t> ca_warn_before_seconds;
  std::optional<int64_t> ca_rotate_before_seconds;  // 0: never
};

// `etcdadm seed`: the store's spec with the fields set in `changes` replaced (0 / "" keep), and
// the controllers' spec with `auto_changes`, its generation one higher and the etcd-manager spec
// copied into it, signed with `keyring`'s CA key and written back unless `dry_run` (kNotFound when
// the keyring cannot sign: the controllers obey only a spec their CA signed). A store without a
// spec needs both fields (kInvalidArgument); a defrag schedule that does not parse is refused.
struct SeedResult {
  std::optional<EtcdManagerClusterSpec> before;
  EtcdManagerClusterSpec after;
  AutoSpec auto_spec;
  std::string effect;  // seed_effect
};
SeedResult seed_cluster_spec(BlobStore& store, const EtcdManagerClusterSpec& changes,
                             const AutoSpecChanges& auto_changes, const RecordKeyring& keyring, bool dry_run);

// `etcdadm auto approve-restore`: the approval (RestoreApproval) of the queued restore command at
// `command_key` ("": the oldest queued), signed with `keyring`'s CA key and written. It binds the
// digest of the backup's db: `verified_db_sha256` when the caller verified the backup already,
// else the backup is verified here (kCorrupt, and recorded as damaged, when it fails), or, when
// it is encrypted and `store` holds no key, the digest its metadata records is bound unverified
// (`verified` false in the result). kNotFound when no such command is queued, its backup is gone
// or the keyring cannot sign.
struct ApprovedRestore {
  RestoreApproval approval;
  bool verified = false;
  // "" when the backup is attested (controller/backup_attestation.h: one of this cluster's
  // controllers took it), else why not: the approver is told to make sure of it.
  std::string not_attested;
};
ApprovedRestore approve_restore_command(const BackupStore& store, Catalog& catalog, const std::string& command_key,
                                        const RecordKeyring& keyring, const std::string& who, int64_t now_unix,
                                        const std::string& verified_db_sha256 = "");

}  // namespace etcdadm

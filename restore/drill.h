// `backup drill`: proof that a backup restores. The backup is fetched, verified and restored into a
// private scratch directory by the same code path as `backup restore` (restore/data_dir.h), a
// private etcd of the backup's version is started on it with a throw-away name and cluster token,
// listening on unix sockets in the 0700 scratch directory and on no TCP port (it serves every Secret
// without TLS or auth), and what it serves is checked against what the backup says it holds:
//   * revision: the member's revision equals the restored db's (and is at least the backup's; with a
//     point in time, the revision the change log was replayed to);
//   * keys: the member's key count equals the live keys the native reader counts in the db;
//   * HashKV at the backup's revision equals the source member's, recorded by `backup save`
//     (BackupMeta::source_hash). A backup without one (older etcdadm, imports, etcd-manager's) is
//     drilled without that check, and the report says so.
// The time of each phase is reported: fetch+verify, restore and start until healthy add up to the
// measured recovery time (RTO); the checks are the drill's own cost. Nothing outside the scratch
// directory is written, the member is stopped however the drill ends, and the directory goes with
// it (one left by a killed drill is removed by the next one).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "etcdadm/release/install.h"
#include "restore/pitr.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm {

struct DrillOptions {
  std::string scratch_parent;  // where the scratch directory goes ("": $TMPDIR, else /tmp)
  std::string etcd_binary;     // --etcd-binary; else the etcd on PATH of the backup's minor, else the release cache
  std::string cache_dir;       // the release cache (etcdadm download's --cache-dir)
  std::chrono::seconds start_timeout{120};  // from starting etcd until it serves
  // When set and it becomes true (the sidecar shutting down), the drill stops at its next wait
  // with Error(kInterrupted), cleaning up as on SIGTERM.
  const std::atomic<bool>* cancel = nullptr;
  // --to-revision / --to-time: the backup's change log replayed onto it first (restore/pitr.h), so
  // the drill proves the newest state the store can bring back ('end'), not only the snapshot.
  PointInTime point_in_time;
};

struct DrillPhase {
  std::string name;  // "fetch+verify", "restore", "start", "checks"
  double seconds = 0;
};

struct DrillCheck {
  std::string name;  // "revision", "keys", "hashkv"
  std::string expected, served;
  bool passed = false;
  std::string note;
};

struct DrillReport {
  std::string backup_name;
  std::string backup_etcd_version;
  LocalEtcd etcd;  // the etcd the backup was started on (empty path: none found)
  int64_t started_micros = 0;
  std::vector<DrillPhase> phases;
  std::vector<DrillCheck> checks;
  std::vector<std::string> notes;  // what was not checked, and why
  double rto_seconds = 0;          // fetch+verify + restore + start
  bool passed = false;
  // When it failed: what failed, as the Error the command exits with.
  ErrorKind failure_kind = ErrorKind::kInternal;
  std::string failure, failure_hint;
  std::string failed_phase;  // the phase it stopped in ("" when a check failed)
};

// Runs the drill. Never throws for a failure of the backup or of the drill's own work: the report
// says what failed (so that a failed drill is recorded like a passed one); throws only when
// interrupted (SIGINT/SIGTERM), after cleaning up.
DrillReport run_drill(const BackupStore& backups, const BackupRecord& backup, const DrillOptions& options);

nlohmann::json drill_report_json(const DrillReport& r);
DrillRecord drill_record_of(const DrillReport& r);

// Writes the result beside the backup (etcdadm-drill.json; best effort: a store this host may not
// write only gets the catalog record, with a warning) and into the catalog; a backup that failed
// its hash checks is also recorded as damaged (restore/damage.h), as any reader would.
void record_drill_result(BlobStore& store, Catalog* catalog, const BackupRecord& backup, const DrillReport& r);

}  // namespace etcdadm

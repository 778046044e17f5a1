// The backup sidecar: runs beside one etcd member and keeps the store full of fresh backups.
//
// Each tick of the schedule, the sidecar whose member is the raft leader (or any member, when so
// configured; learners never) saves a backup, verifies it, applies retention, and records the
// outcome in its metrics. The next tick is computed from the newest backup in the store, not from
// memory: every sidecar of the cluster agrees on it, a leadership change hands the job over
// without a gap, and a restart neither skips a tick nor causes a burst.
//
// Besides the schedule, trigger() runs a backup as soon as possible (SIGUSR1, HTTP POST /backup).
// stop() lets a running backup finish within the grace period, then cancels it (the store keeps
// nothing of a cancelled backup).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "backup/prune.h"
#include "backup/retention.h"
#include "backup/save.h"
#include "backup/schedule.h"
#include "sidecar/changelog_loop.h"

namespace etcdadm {

// What one drill of a backup came to (restore/drill.h's report, reduced to what the sidecar counts).
struct DrillOutcome {
  bool passed = false;
  double rto_seconds = 0;
  std::string reason;  // error kind name when it failed ("corrupt", "not found", ...)
  std::string message;
};

// What one bringing-up-to-date of the second store (--copy-to) came to.
struct CopyOutcome {
  int copied = 0;                    // backups copied (those already there not counted)
  std::vector<std::string> damaged;  // source backups refused by a check (not copied)
};

struct SidecarOptions {
  Schedule schedule = Schedule::parse("@hourly");
  bool leader_only = true;
  std::string member_endpoint;  // the member this sidecar runs beside
  SaveOptions save;
  std::optional<RetentionPolicy> retention;
  PruneOptions prune;    // how retention deletes (versioned buckets)
  int verify_every = 1;  // 0: never; N: read back and check every Nth backup
  // Reads a backup back and checks it as deep as the store's keys allow (every hash; only the
  // stored bytes and age header of an encrypted backup without its identity: restore/verify.h
  // reachable_depth); throws on a bad backup (sidecar/checks.h verify_after_backup; a test may give
  // another).
  std::function<void(const std::string& name)> verify;
  std::chrono::seconds ready_max_age{std::chrono::hours(2)};
  // --continuous: the change log beside the snapshots (changelog_loop.h); nullopt: snapshots only.
  std::optional<ChangeLogLoopOptions> continuous;
  std::chrono::seconds shutdown_grace{std::chrono::seconds(30)};
  // --drill-schedule: drill the newest intact backup on this schedule, from the sidecar that writes
  // backups (the leader's, unless any member does). The next drill is computed from the newest
  // drill recorded in the store, as backups are from the newest backup.
  std::optional<Schedule> drill_schedule;
  // Drills one backup and records the result in the store and catalog (sidecar/checks.h
  // drill_backup). Throws Error(kInterrupted) when `cancel`
  // stopped it.
  std::function<DrillOutcome(const std::string& name, const std::atomic<bool>* cancel)> drill;
  // --copy-to: after each backup of this sidecar, bring the second store up to date (the backups
  // newer than its newest, oldest first, with their change log; then its own retention). See
  // sidecar/checks.h copy_new_backups_to. Throws when the second store fails: counted, and what it missed
  // is copied at the next tick.
  std::function<CopyOutcome()> copy;
  std::string copy_to;  // its URL, for logs
  // The second store's own retention (--copy-retention), applied after each successful copy.
  BlobStore* copy_store = nullptr;
  std::optional<RetentionPolicy> copy_retention;
  // Called with each backup this sidecar saved (and verified, when it verifies), before retention:
  // `etcdadm auto` attests it (controller/backup_attestation.h). A throw is logged; the backup
  // stands (only an auto-restore needs the attestation).
  std::function<void(const BackupMeta& saved)> attest;
  // More Prometheus text appended to /metrics (`etcdadm auto`: its controller's gauges); empty: none.
  std::function<std::string()> more_metrics;
};

// "always" -> 1, "never" -> 0, "every:N" -> N (SidecarOptions::verify_every). Throws kInvalidArgument.
int parse_verify_every(const std::string& spec);

class Sidecar {
 public:
  Sidecar(EtcdClient& client, BlobStore& store, Catalog* catalog, SidecarOptions options);

  void run();  // returns after stop()
  void stop();
  void trigger(const std::string& why);
  // A backup that reaches `revision` (the change log restarting after a gap): when a backup is
  // running, it is awaited and another one is taken only if it falls short, so that a gap found
  // while the start-up backup runs costs one snapshot, not two of the same revision.
  void trigger_reaching(const std::string& why, int64_t revision);

  // Prometheus text exposition of the counters below.
  std::string metrics_text();
  // False, with the reason, when the newest backup is older than ready_max_age.
  bool ready(std::string* why);
  std::string backups_json();

 private:
  enum class Outcome { kSuccess, kFailure, kSkipped };
  void tick(const std::string& why);
  void drill_tick();
  void copy_to_second_store();
  // Applies `policy` to `store` after a good backup or copy. A failure or refusal (backup/prune.h)
  // is logged with the command a person would run and counted; it never fails the backup.
  void apply_retention(BlobStore& store, const RetentionPolicy& policy, const std::string& which);
  // Whether this sidecar's member writes backups now (the leader, or any voter with --any-member);
  // nullopt (logged) when the member does not answer.
  std::optional<bool> writes_backups();
  void record(Outcome outcome, const std::string& reason, double seconds);
  // Syncs the catalog with the store and caches the newest backup's time and the backup list for
  // the HTTP thread (the catalog is used by the loop thread only). Returns the newest time.
  std::optional<SystemTime> refresh_store_view();
  void load_history();
  // Logs when the next scheduled backup is due and why (loop thread only).
  void log_plan(SystemTime next, const std::string& why);
  std::string newest_name();  // of the backup newest_ is the time of

  EtcdClient& client_;
  BlobStore& store_;
  Catalog* catalog_;
  SidecarOptions options_;
  std::unique_ptr<ChangeLogLoop> log_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::string pending_trigger_;
  // A trigger_reaching() that came while a backup ran: the revision it needs, and why.
  int64_t pending_reaching_ = 0;
  std::string pending_reaching_why_;
  std::atomic<bool> cancel_{false};
  bool in_flight_ = false;
  std::string last_plan_;  // the last plan log_plan logged at info (loop thread only)

  // Metrics (under mu_).
  std::optional<SystemTime> newest_;
  std::string newest_name_;
  double last_success_ = 0, last_attempt_ = 0;
  bool last_ok_ = false, is_leader_ = false;
  int64_t backups_done_ = 0;
  uint64_t last_stored_ = 0, last_db_ = 0;
  int64_t last_revision_ = 0;
  std::map<std::string, int64_t> attempts_;  // by result
  std::map<std::string, int64_t> failures_;  // by reason
  int64_t retention_deleted_ = 0;
  int64_t retention_failures_ = 0;
  std::string backups_json_ = "[]";
  // Drills: what the store says (newest drill of any backup, by any host), and this process's counts.
  std::optional<SystemTime> newest_drill_;
  std::string newest_intact_;  // the backup a drill takes ("" when none)
  double last_drill_success_ = 0, last_drill_rto_ = 0;
  bool last_drill_ok_ = false, drilled_ever_ = false;
  std::map<std::string, int64_t> drill_attempts_;  // by result
  std::map<std::string, int64_t> drill_failures_;  // by reason
  // The second store (--copy-to).
  double last_copy_success_ = 0;
  bool last_copy_ok_ = false, copied_ever_ = false;
  int64_t backups_copied_ = 0;
  std::map<std::string, int64_t> copy_failures_;  // by reason
  std::vector<int64_t> duration_buckets_;
  double duration_sum_ = 0;
  int64_t duration_count_ = 0;
};

}  // namespace etcdadm

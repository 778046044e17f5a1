#include "sidecar/sidecar.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "backup/member_select.h"
#include "backup/prune.h"
#include "common/error.h"
#include "common/prometheus_text.h"
#include "render/backup_record.h"
#include "store/layout.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::system_clock;
const double kDurationBuckets[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600};
const char* const kSidecarOrigin = "sidecar";

double unix_seconds_of(SystemTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

}  // namespace

int parse_verify_every(const std::string& spec) {
  if (spec == "always") return 1;
  if (spec == "never") return 0;
  if (spec.rfind("every:", 0) == 0 && std::atoi(spec.c_str() + 6) > 0) return std::atoi(spec.c_str() + 6);
  throw Error(ErrorKind::kInvalidArgument, "invalid --verify " + spec, "always, never or every:N");
}

Sidecar::Sidecar(EtcdClient& client, BlobStore& store, Catalog* catalog, SidecarOptions options)
    : client_(client), store_(store), catalog_(catalog), options_(std::move(options)) {
  duration_buckets_.assign(std::size(kDurationBuckets), 0);
  // Before the HTTP server can ask for /metrics: counters continue where the last run of this
  // host left them, from the first scrape on.
  load_history();
}

void Sidecar::stop() {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return;
  stopping_ = true;
  cv_.notify_all();
  if (!in_flight_) return;
  spdlog::info("stopping: letting the running backup finish for up to {}s", options_.shutdown_grace.count());
  // A running backup gets the grace period, then is cancelled (nothing of it stays in the store).
  if (!cv_.wait_for(lock, options_.shutdown_grace, [&] { return !in_flight_; })) {
    spdlog::warn("grace period over: cancelling the running backup");
    cancel_ = true;
  }
}

void Sidecar::trigger(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_trigger_ = why;
  cv_.notify_all();
}

void Sidecar::trigger_reaching(const std::string& why, int64_t revision) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!in_flight_) {
    pending_trigger_ = why;
    cv_.notify_all();
    return;
  }
  pending_reaching_ = std::max(pending_reaching_, revision);
  pending_reaching_why_ = why;
  spdlog::info("{}: a backup is running; another is taken only if it does not reach revision {}", why, revision);
}

void Sidecar::load_history() {
  if (catalog_ == nullptr) return;
  std::vector<AttemptRecord> history;
  try {
    // Only this sidecar's kind of attempt: a save run by hand (or from cron) on this host is no
    // sidecar attempt, and counting it would make a dead sidecar look alive.
    history = catalog_->attempts(store_.url(), 100000, kSidecarOrigin);
  } catch (const Error& e) {
    spdlog::warn("cannot read the attempt history: {}", e.what());
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& a : history) {  // newest first
    ++attempts_[a.result];
    if (a.result == "failure") ++failures_[a.reason];
    double finished = static_cast<double>(a.finished_micros) / 1e6;
    if (last_attempt_ == 0) {
      last_attempt_ = finished;
      last_ok_ = a.result == "success";
    }
    if (a.result == "success" && last_success_ == 0) last_success_ = finished;
  }
}

void Sidecar::run() {
  std::optional<SystemTime> last_scheduled_tick, last_drill_tick;
  const SystemTime started = Clock::now();
  const bool drills = options_.drill_schedule && options_.drill;
  spdlog::info("backup sidecar started: schedule '{}', {}{}{}", options_.schedule.spec(),
               options_.leader_only ? "backups by the leader's sidecar only" : "backups by any member",
               options_.continuous ? ", continuous change log" : "",
               drills ? ", drills '" + options_.drill_schedule->spec() + "'" : "");
  if (options_.continuous) {
    log_ = std::make_unique<ChangeLogLoop>(
        client_, store_, catalog_, *options_.continuous,
        [this](const std::string& why, int64_t reaching) { trigger_reaching(why, reaching); });
    log_->start();
  }
  for (;;) {
    std::optional<SystemTime> newest;
    try {
      newest = refresh_store_view();
    } catch (const std::exception& e) {
      spdlog::warn("cannot list the store ({}); retrying at the next tick", e.what());
      std::lock_guard<std::mutex> lock(mu_);
      newest = newest_;  // as the last listing saw it: a failed listing is no empty store
    }
    // All sidecars derive the next tick from the store; a sidecar that skipped or failed a
    // scheduled tick (not the leader, the member down) waits for the tick after that one. A
    // trigger (POST /backup, SIGUSR1, a change-log gap) moves the schedule only through the backup
    // it stores: a failed one leaves the next scheduled tick where it was.
    std::optional<SystemTime> base = newest;
    if (last_scheduled_tick && (!base || *last_scheduled_tick > *base)) base = last_scheduled_tick;
    SystemTime next = base ? options_.schedule.next_after(*base) : Clock::now();
    log_plan(next, !base            ? "no backup in the store yet"
                   : base == newest ? "after the newest backup " + newest_name()
                                    : "after the scheduled tick at " + format_rfc3339_micros(*base));
    // Drills the same way, from the newest drill recorded in the store (a failed one counts: a
    // failing drill is not retried in a tight loop), or from the start of this sidecar.
    std::optional<SystemTime> next_drill;
    if (drills) {
      SystemTime drill_base = started;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (newest_drill_ && *newest_drill_ > drill_base) drill_base = *newest_drill_;
      }
      if (last_drill_tick && *last_drill_tick > drill_base) drill_base = *last_drill_tick;
      next_drill = options_.drill_schedule->next_after(drill_base);
    }
    std::string why;
    bool drill_now = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const SystemTime until = next_drill && *next_drill < next ? *next_drill : next;
      cv_.wait_until(lock, until, [&] { return stopping_ || !pending_trigger_.empty(); });
      if (stopping_) break;
      if (pending_trigger_.empty() && next_drill && *next_drill < next) {
        if (Clock::now() < *next_drill) continue;  // woken early: wait again
        drill_now = true;
      }
      why = pending_trigger_.empty() ? "schedule" : pending_trigger_;
      pending_trigger_.clear();
    }
    if (drill_now) {
      last_drill_tick = Clock::now();
      drill_tick();
      continue;
    }
    if (why == "schedule") last_scheduled_tick = Clock::now();
    tick(why);
  }
  if (log_) log_->stop();  // stores what the log holds
  spdlog::info("backup sidecar stopped");
}

void Sidecar::log_plan(SystemTime next, const std::string& why) {
  // Every loop at debug, a change at info: the plan is what a person (and the tests) read to see
  // that a trigger or a failure moved nothing.
  const std::string line = "next scheduled backup at " + format_rfc3339_micros(next) + " (" + why + ")";
  if (line == last_plan_) {
    spdlog::debug("{}", line);
  } else {
    spdlog::info("{}", line);
    last_plan_ = line;
  }
}

std::string Sidecar::newest_name() {
  std::lock_guard<std::mutex> lock(mu_);
  return newest_name_;
}

std::optional<bool> Sidecar::writes_backups() {
  try {
    auto st = client_.status(options_.member_endpoint);
    const bool leader = st.leader() == st.header().member_id();
    std::lock_guard<std::mutex> lock(mu_);
    is_leader_ = leader;
    return !st.islearner() && (leader || !options_.leader_only);
  } catch (const Error& e) {
    spdlog::warn("member {} unreachable: {}", options_.member_endpoint, e.what());
    return std::nullopt;
  }
}

void Sidecar::drill_tick() {
  // The writing member's sidecar drills: one drill per schedule slot for the cluster, on the host
  // that already streams the snapshots.
  auto writes = writes_backups();
  std::string name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    name = newest_intact_;
    if (!writes || !*writes || name.empty() || stopping_) {
      ++drill_attempts_["skipped"];
      if (writes && *writes && name.empty()) spdlog::info("drill: no intact backup in the store to drill");
      return;
    }
    in_flight_ = true;
  }
  spdlog::info("drill of backup {} (schedule)", name);
  try {
    DrillOutcome o = options_.drill(name, &cancel_);
    std::lock_guard<std::mutex> lock(mu_);
    ++drill_attempts_[o.passed ? "success" : "failure"];
    drilled_ever_ = true;
    last_drill_ok_ = o.passed;
    newest_drill_ = Clock::now();
    if (o.passed) {
      last_drill_success_ = unix_seconds_of(Clock::now());
      last_drill_rto_ = o.rto_seconds;
      spdlog::info("drill of backup {} passed: RTO {:.2f}s", name, o.rto_seconds);
    } else {
      ++drill_failures_[o.reason];
      spdlog::error("drill of backup {} failed: {}", name, o.message);
    }
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (e.kind() == ErrorKind::kInterrupted) {
      spdlog::info("drill of backup {} cancelled: shutting down", name);
    } else {
      ++drill_attempts_["failure"];
      ++drill_failures_[error_kind_name(e.kind())];
      spdlog::error("drill of backup {} failed: {}", name, e.what());
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    ++drill_attempts_["failure"];
    ++drill_failures_["internal"];
    spdlog::error("drill of backup {} failed unexpectedly: {}", name, e.what());
  }
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_ = false;
  cv_.notify_all();
}

void Sidecar::tick(const std::string& why) {
  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // Leadership is checked at every tick: it can move between ticks.
  try {
    auto st = client_.status(options_.member_endpoint);
    bool leader = st.leader() == st.header().member_id();
    {
      std::lock_guard<std::mutex> lock(mu_);
      is_leader_ = leader;
    }
    if (st.islearner()) {
      record(Outcome::kSkipped, "learner", seconds());
      return;
    }
    if (options_.leader_only && !leader && why == "schedule") {
      spdlog::debug("tick: member {} is not the leader; the leader's sidecar takes this backup",
                    id_hex(st.header().member_id()));
      record(Outcome::kSkipped, "not leader", seconds());
      return;
    }
  } catch (const Error& e) {
    spdlog::error("backup attempt ({}): member {} unreachable: {}", why, options_.member_endpoint, e.what());
    record(Outcome::kFailure, error_kind_name(e.kind()), seconds());
    if (catalog_ != nullptr) {
      AttemptRecord a;
      a.finished_micros = to_unix_micros(Clock::now());
      a.started_micros = a.finished_micros - static_cast<int64_t>(seconds() * 1e6);
      a.result = "failure";
      a.origin = kSidecarOrigin;
      a.reason = error_kind_name(e.kind());
      a.message = e.what();
      try {
        catalog_->record_attempt(store_.url(), a);
      } catch (const Error& ce) {
        spdlog::warn("could not record the backup attempt in the catalog: {}", ce.what());
      }
    }
    return;
  }

  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;  // stop() came while we checked leadership: no new backup
    in_flight_ = true;
  }
  SaveOptions so = options_.save;
  so.preferred_endpoint = options_.member_endpoint;
  so.cancel = &cancel_;
  so.attempt_origin = kSidecarOrigin;
  int64_t saved_revision = 0;  // of this tick's backup, when it succeeded
  try {
    SaveResult r = save_backup(client_, store_, catalog_, so);
    saved_revision = r.meta.revision.value_or(0);
    bool verify_now = options_.verify && options_.verify_every > 0 && (backups_done_ % options_.verify_every) == 0;
    if (verify_now) options_.verify(r.meta.name);
    if (options_.attest) {
      try {
        options_.attest(r.meta);
      } catch (const std::exception& e) {
        spdlog::error("backup {} is not attested, so no auto-restore takes it: {}", r.meta.name, e.what());
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++backups_done_;
      last_stored_ = r.meta.stored_size;
      last_db_ = r.meta.db_size;
      last_revision_ = r.meta.revision.value_or(0);
      last_success_ = unix_seconds_of(Clock::now());
    }
    spdlog::info("backup {} ok ({}): revision {}, db {} bytes, stored {} bytes, {:.2f}s{}", r.meta.name, why,
                 r.meta.revision.value_or(0), r.meta.db_size, r.meta.stored_size, seconds(),
                 verify_now ? ", verified" : "");
    record(Outcome::kSuccess, "", seconds());
    // The second copy before this store's retention: what a failed copy missed is still here for
    // the next one to take, unless this store's own policy has let it go meanwhile.
    if (options_.copy) copy_to_second_store();
    // Retention only after a good backup: a failing sidecar never thins out what is left.
    if (options_.retention) apply_retention(store_, *options_.retention, "the store");
  } catch (const Error& e) {
    spdlog::error("backup attempt ({}) failed: {}", why, e.what());
    record(Outcome::kFailure, error_kind_name(e.kind()), seconds());
  } catch (const std::exception& e) {
    // Not one of ours (a library's exception): still one failed attempt, never a dead sidecar.
    spdlog::error("backup attempt ({}) failed unexpectedly: {}", why, e.what());
    record(Outcome::kFailure, "internal", seconds());
  }
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_ = false;
  if (pending_reaching_ > 0) {
    if (saved_revision >= pending_reaching_) {
      spdlog::info("{}: answered by the backup just taken (revision {})", pending_reaching_why_, saved_revision);
    } else {
      pending_trigger_ = pending_reaching_why_;
    }
    pending_reaching_ = 0;
  }
  cv_.notify_all();
}

void Sidecar::apply_retention(BlobStore& store, const RetentionPolicy& policy, const std::string& which) {
  try {
    PruneResult p = prune_backups(store, catalog_, policy, Clock::now(), options_.prune);
    std::lock_guard<std::mutex> lock(mu_);
    retention_deleted_ += static_cast<int64_t>(p.deleted.size());
  } catch (const std::exception& e) {
    std::string hint;
    if (const auto* err = dynamic_cast<const Error*>(&e); err && !err->hint().empty()) hint = " (" + err->hint() + ")";
    spdlog::error(
        "retention of {} ({}) failed: {}{}; to run it by hand once checked: etcdadm backup prune "
        "--store {} --policy {}",
        which, policy.describe(), e.what(), hint, store.url(), policy.spec());
    std::lock_guard<std::mutex> lock(mu_);
    ++retention_failures_;
  }
}

void Sidecar::copy_to_second_store() {
  try {
    CopyOutcome c = options_.copy();
    {
      std::lock_guard<std::mutex> lock(mu_);
      copied_ever_ = true;
      backups_copied_ += c.copied;
      last_copy_ok_ = c.damaged.empty();
      if (c.damaged.empty()) {
        last_copy_success_ = unix_seconds_of(Clock::now());
      } else {
        copy_failures_[error_kind_name(ErrorKind::kCorrupt)] += static_cast<int64_t>(c.damaged.size());
      }
    }
    if (!c.damaged.empty()) {
      spdlog::error("copy to {}: {} backup(s) not copied: {}", options_.copy_to, c.damaged.size(), c.damaged.front());
    }
    if (c.copied > 0) spdlog::info("copy to {}: {} backup(s) copied", options_.copy_to, c.copied);
    // The second store's own retention, after a good copy only (as for the first store).
    if (options_.copy_retention && options_.copy_store != nullptr && c.damaged.empty()) {
      apply_retention(*options_.copy_store, *options_.copy_retention, "the second store");
    }
  } catch (const Error& e) {
    spdlog::error("copy to {} failed (retried at the next backup): {}", options_.copy_to, e.what());
    std::lock_guard<std::mutex> lock(mu_);
    copied_ever_ = true;
    last_copy_ok_ = false;
    ++copy_failures_[error_kind_name(e.kind())];
  } catch (const std::exception& e) {
    spdlog::error("copy to {} failed unexpectedly (retried at the next backup): {}", options_.copy_to, e.what());
    std::lock_guard<std::mutex> lock(mu_);
    copied_ever_ = true;
    last_copy_ok_ = false;
    ++copy_failures_["internal error"];
  }
}

void Sidecar::record(Outcome outcome, const std::string& reason, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  const char* result = outcome == Outcome::kSuccess ? "success" : outcome == Outcome::kFailure ? "failure" : "skipped";
  ++attempts_[result];
  if (outcome == Outcome::kSkipped) return;
  last_attempt_ = unix_seconds_of(Clock::now());
  last_ok_ = outcome == Outcome::kSuccess;
  if (outcome == Outcome::kFailure) ++failures_[reason];
  for (size_t i = 0; i < duration_buckets_.size(); ++i) {
    if (seconds <= kDurationBuckets[i]) ++duration_buckets_[i];
  }
  duration_sum_ += seconds;
  ++duration_count_;
}

bool Sidecar::ready(std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!newest_) {
    *why = "no backup in the store yet";
    return false;
  }
  auto exact_age = Clock::now() - *newest_;
  auto age = std::chrono::duration_cast<std::chrono::seconds>(exact_age);
  if (exact_age > options_.ready_max_age) {
    *why = "newest backup is " + std::to_string(age.count()) + "s old (limit " +
           std::to_string(options_.ready_max_age.count()) + "s)";
    return false;
  }
  if (log_) {
    if (auto rpo = log_->rpo_seconds(); rpo && *rpo > static_cast<double>(options_.continuous->max_rpo.count())) {
      *why = "change log RPO is " + std::to_string(static_cast<int64_t>(*rpo)) + "s (limit " +
             std::to_string(options_.continuous->max_rpo.count()) + "s)";
      return false;
    }
  }
  *why = "newest backup is " + std::to_string(age.count()) + "s old";
  return true;
}

std::string Sidecar::metrics_text() {
  std::lock_guard<std::mutex> lock(mu_);
  PrometheusText o;
  o.gauge("etcdadm_backup_last_success_timestamp_seconds", "Unix time of the last successful backup by this sidecar.",
          last_success_);
  o.gauge("etcdadm_backup_last_attempt_timestamp_seconds", "Unix time of the last backup attempt.", last_attempt_);
  o.gauge("etcdadm_backup_last_attempt_success", "1 when the last attempt succeeded.", last_ok_ ? 1 : 0);
  o.gauge("etcdadm_backup_newest_timestamp_seconds", "Unix time of the newest backup in the store.",
          newest_ ? unix_seconds_of(*newest_) : 0);
  o.gauge("etcdadm_backup_last_stored_bytes", "Stored (compressed) size of the last backup.",
          static_cast<double>(last_stored_));
  o.gauge("etcdadm_backup_last_db_bytes", "Database size of the last backup.", static_cast<double>(last_db_));
  o.gauge("etcdadm_backup_last_revision", "etcd revision of the last backup.", static_cast<double>(last_revision_));
  o.gauge("etcdadm_backup_member_is_leader", "1 when the local member was the raft leader at the last tick.",
          is_leader_ ? 1 : 0);
  if (log_) {
    ChangeLogLoopStatus s = log_->status();
    auto rpo = log_->rpo_seconds();
    o.gauge("etcdadm_changelog_capturing", "1 while this sidecar writes the change log (its member leads).",
            s.running ? 1 : 0);
    o.gauge(
        "etcdadm_changelog_rpo_seconds",
        "Seconds since the newest revision in the store was received, growing while capture fails (0: nothing newer "
        "received; -1: this sidecar does not write the log).",
        rpo ? *rpo : -1);
    o.gauge("etcdadm_changelog_stored_revision", "The newest revision safely in the store.",
            static_cast<double>(s.stored_revision));
    o.gauge("etcdadm_changelog_lag_revisions", "Revisions received but not yet in the store.",
            static_cast<double>(s.received_revision > s.stored_revision ? s.received_revision - s.stored_revision : 0));
    o.counter("etcdadm_changelog_segments_total", "Change log segments written.", s.segments_written);
    o.counter("etcdadm_changelog_bytes_total", "Change log bytes written.", s.bytes_written);
    o.counter("etcdadm_changelog_gaps_total", "Gaps in the change log (etcd compacted what it needed).", s.gaps);
  }
  // Drills: the gauges are the store's (a drill by any host counts), the counters this process's.
  o.gauge("etcdadm_drill_last_success_timestamp_seconds",
          "Unix time of the newest drill that passed, of any backup in the store (0: none).", last_drill_success_);
  o.gauge("etcdadm_drill_last_rto_seconds", "Measured recovery time (fetch+verify, restore, start) of that drill.",
          last_drill_rto_);
  o.gauge("etcdadm_drill_last_success", "1 when the newest drill in the store passed (0 when it failed or none ran).",
          drilled_ever_ && last_drill_ok_ ? 1 : 0);
  auto by_label = [&](const char* name, const char* help, const char* label, const auto& counts) {
    o.family(name, help, "counter");
    for (const auto& [value, n] : counts) o.sample(name, label, value, std::to_string(n));
  };
  auto by_result = [&](const char* name, const char* help, const auto& counts) {
    o.family(name, help, "counter");
    for (const char* r : {"success", "failure", "skipped"}) {
      o.sample(name, "result", r, std::to_string(counts.count(r) ? counts.at(r) : 0));
    }
  };
  by_result("etcdadm_drill_attempts_total", "Scheduled drills by result.", drill_attempts_);
  by_label("etcdadm_drill_failures_total", "Failed drills by reason.", "reason", drill_failures_);
  if (options_.copy) {
    o.gauge("etcdadm_copy_last_success_timestamp_seconds",
            "Unix time the second store (--copy-to) was last brought up to date (0: not yet).", last_copy_success_);
    o.gauge("etcdadm_copy_last_attempt_success", "1 when the last copy to the second store succeeded.",
            copied_ever_ && last_copy_ok_ ? 1 : 0);
    o.counter("etcdadm_copy_backups_total", "Backups copied to the second store.", backups_copied_);
    by_label("etcdadm_copy_failures_total", "Failed copies to the second store by reason.", "reason", copy_failures_);
  }
  by_result("etcdadm_backup_attempts_total", "Backup ticks by result.", attempts_);
  by_label("etcdadm_backup_failures_total", "Failed backups by reason.", "reason", failures_);
  o.counter("etcdadm_backup_retention_deleted_total", "Backups deleted by retention.", retention_deleted_);
  o.counter("etcdadm_backup_retention_failures_total",
            "Retention runs that failed or were refused (nothing deleted by them).", retention_failures_);
  o.family("etcdadm_backup_duration_seconds", "Duration of backup attempts.", "histogram");
  for (size_t i = 0; i < duration_buckets_.size(); ++i) {
    o.sample("etcdadm_backup_duration_seconds_bucket", "le", prometheus_value(kDurationBuckets[i]),
             std::to_string(duration_buckets_[i]));
  }
  o.sample("etcdadm_backup_duration_seconds_bucket", "le", "+Inf", std::to_string(duration_count_));
  o.sample("etcdadm_backup_duration_seconds_sum", "", "", prometheus_value(duration_sum_));
  o.sample("etcdadm_backup_duration_seconds_count", "", "", std::to_string(duration_count_));
  if (options_.more_metrics) o.append(options_.more_metrics());
  return o.text();
}

std::string Sidecar::backups_json() {
  std::lock_guard<std::mutex> lock(mu_);
  return backups_json_;
}

std::optional<SystemTime> Sidecar::refresh_store_view() {
  // One listing of the store per loop: the catalog sync reads it, and the schedule's base, /readyz
  // and /backups all come from the synced catalog.
  std::vector<BackupRecord> records;
  if (catalog_ != nullptr) {
    catalog_->sync(store_);
    records = catalog_->backups(store_.url());
  } else {
    for (const auto& l : scan_backups(store_)) {
      BackupRecord r;
      r.name = l.name;
      records.push_back(r);
    }
  }
  // A backup dated in the future (a writer with a skewed clock) must not push every sidecar's
  // next tick into the future: it is ignored for scheduling.
  const SystemTime horizon = Clock::now() + std::chrono::minutes(5);
  std::optional<SystemTime> newest;
  std::string newest_name;
  std::optional<DrillRecord> newest_drill_record, newest_passed_drill;
  std::string newest_intact;  // records come newest first
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : records) {
    if (newest_intact.empty() && !r.damage && r.format != kUnreadableFormat) newest_intact = r.name;
    if (r.drill) {
      if (!newest_drill_record || r.drill->drilled_at_micros > newest_drill_record->drilled_at_micros)
        newest_drill_record = r.drill;
      if (r.drill->passed &&
          (!newest_passed_drill || r.drill->drilled_at_micros > newest_passed_drill->drilled_at_micros)) {
        newest_passed_drill = r.drill;
      }
    }
    list.push_back(render::backup_record_json(r));
    auto parsed = parse_backup_name(r.name);
    if (!parsed) continue;
    if (parsed->time > horizon) {
      spdlog::warn("backup {} is dated in the future (a clock is off); ignored for scheduling", r.name);
      continue;
    }
    if (!newest || parsed->time > *newest) {
      newest = parsed->time;
      newest_name = r.name;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  newest_ = newest;
  newest_name_ = newest_name;
  newest_intact_ = newest_intact;
  if (newest_drill_record) {
    // Never dated in the future for scheduling, as backups above.
    newest_drill_ = std::min(from_unix_micros(newest_drill_record->drilled_at_micros), horizon);
    drilled_ever_ = true;
    last_drill_ok_ = newest_drill_record->passed;
  }
  if (newest_passed_drill) {
    last_drill_success_ = static_cast<double>(newest_passed_drill->drilled_at_micros) / 1e6;
    last_drill_rto_ = newest_passed_drill->rto_seconds;
  }
  backups_json_ = list.dump(2);
  return newest;
}

}  // namespace etcdadm

// The Controller's round (tick: observe, decide, act), its loop, how each step is recorded (a log
// line, an event, repeats held back) and its gauges; the steps themselves are in act_<concern>.cc,
// the observation in controller_observe.cc, this host's own record and local state in
// own_records.cc.
#include "controller/controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "backup/pre_change.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/interrupt.h"
#include "common/json_fields.h"
#include "common/prometheus_text.h"
#include "common/sha256.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "controller/backup_attestation.h"
#include "controller/controller_internal.h"
#include "etcdadm/maintenance/alarms.h"
#include "etcdadm/member_health.h"
#include "etcdadm/pki.h"
#include "store/blob_capabilities.h"
#include "store/etcd_manager.h"

namespace etcdadm {

using json = nlohmann::json;
using namespace controller_internal;
using std::chrono::steady_clock;

namespace controller_internal {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t seconds_since(steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(steady_clock::now() - t).count();
}

int64_t seconds_until(steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t - steady_clock::now()).count();
}

int64_t held_for_seconds(std::optional<steady_clock::time_point>& since, bool condition) {
  if (!condition) {
    since.reset();
    return 0;
  }
  if (!since) since = steady_clock::now();
  return seconds_since(*since);
}

std::vector<std::string> controller_phases(const std::vector<Phase>& phases) {
  std::vector<std::string> out;
  for (const auto& p : phases) {
    if (p.name == "health" || p.name == "etcdctl") continue;
    if (p.name == "start") out.push_back("etcdctl");
    out.push_back(p.name);
  }
  return out;
}

std::string without_running_seconds(const std::string& text) {
  static const std::regex seconds(R"(\b[0-9]+ s\b)");
  return std::regex_replace(text, seconds, "N s");
}

MaintenanceRecord readable_maintenance(BlobStore& store, const RecordPolicy& policy) {
  try {
    return read_maintenance(store, &policy);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt) throw;
    spdlog::warn("auto: ignoring the maintenance record: {}", e.what());
    return {};
  }
}

CertExpiry cert_expiry(const std::string& certs_dir) {
  CertExpiry e;
  for (const auto& c : inspect_certs(certs_dir)) {
    const int64_t until = std::chrono::duration_cast<std::chrono::seconds>(c.not_after.time_since_epoch()).count();
    if (c.is_ca) {
      e.ca_unix = until;
    } else if (e.first_unix == 0 || until < e.first_unix) {
      e.first_unix = until;
      e.first = c.name + ".crt";
    }
  }
  return e;
}

}  // namespace controller_internal

namespace {

constexpr size_t kEventsKept = 500;

// A fresh initial-cluster token: member and cluster IDs derive from it, so two plans never share one.
std::string new_cluster_token() { return "etcd-auto-" + random_hex(8); }

// The controller's view of a cluster must come back fast: a member that does not answer is one
// fact among others, not a reason to stall every other decision.
ConnectionConfig quick(ConnectionConfig c) {
  c.dial_timeout = std::chrono::milliseconds(1500);
  c.command_timeout = std::chrono::milliseconds(3000);
  return c;
}

}  // namespace

Controller::Controller(BackupStore store, ControllerOptions options)
    : store_(std::move(store)),
      options_(std::move(options)),
      catalog_(
          Catalog::open_or_memory(options_.catalog_path.empty() ? Catalog::default_path() : options_.catalog_path)),
      member_(options_.lifecycle.member),
      init_system_(make_init_system(member_.init_system)),
      pool_(quick(connection_to(member_, {}))) {
  // The others count a host dead once its record has not changed for host_timeout: two heartbeats
  // must fit in it, or a live host is counted dead between them.
  if (options_.heartbeat <= std::chrono::seconds(0) || options_.heartbeat * 2 > options_.host_timeout) {
    throw Error(ErrorKind::kInvalidArgument,
                "--heartbeat " + std::to_string(options_.heartbeat.count()) + "s is out of range: 1s to " +
                    std::to_string(options_.host_timeout.count() / 2) + "s (the other hosts count a host dead once " +
                    "its record has not changed for " + std::to_string(options_.host_timeout.count()) + " s)");
  }
  if (options_.interval <= std::chrono::milliseconds(0) || options_.idle_interval < options_.interval) {
    throw Error(ErrorKind::kInvalidArgument, "--interval must be positive and --idle-interval at least as long");
  }
  if (!path_exists(member_.ca_cert()) || !path_exists(member_.ca_key())) {
    throw Error(ErrorKind::kNotFound, "no cluster CA in " + member_.certs_dir + " (ca.crt and ca.key)",
                "copy ca.crt and ca.key (mode 0600) from the host that holds the cluster's CA, or make one with "
                "`etcdadm init phase certificates` on one host and copy it to the others: every host of a cluster "
                "needs the same CA, so the controller never makes one itself");
  }
  ca_sha256_ = ca_fingerprint(member_.ca_cert());
  load_keyring();
  // The store must decide conditional writes itself: the plan is what keeps two hosts from
  // creating two clusters.
  conditional_writes(*store_, "etcdadm auto", auto_probe_key(member_.name));
  // The store exists now (the probe wrote to it): one that vanishes later is never made again
  // empty by a heartbeat or an event (a directory renamed away or removed).
  never_make_again(*store_);
  host_id_ = load_or_make_host_id(member_.config_dir);
  // This host's certificates (the client one reaches the other members), issued from the CA.
  run_init(options_.lifecycle, "certificates");
  sequence_ = static_cast<uint64_t>(to_unix_micros(std::chrono::system_clock::now()));
}

void Controller::load_keyring() {
  RecordKeyring ring = RecordKeyring::of_certs_dir(member_.certs_dir);
  if (!rotation_key_pem_.empty()) ring.accept_key(rotation_key_pem_);
  std::lock_guard<std::mutex> lock(keyring_mu_);
  keyring_ = std::move(ring);
}

RecordKeyring Controller::keyring_copy() const {
  std::lock_guard<std::mutex> lock(keyring_mu_);
  return keyring_;
}

void Controller::attest_backup(BlobStore& store, const BackupMeta& saved) {
  write_backup_attestation(store, attestation_of(saved, member_.name), keyring_copy());
}

std::string Controller::tag_segment(const std::string& message) {
  std::lock_guard<std::mutex> lock(keyring_mu_);
  return keyring_.can_sign() ? keyring_.tag(message) : "";
}

bool Controller::backup_attested(BlobStore& store, const BackupRecord& backup) const {
  const RecordKeyring ring = keyring_copy();
  try {
    return backup_attestation_refusal(store, backup, RecordPolicy{&ring, options_.accept_unsigned_records}).empty();
  } catch (const Error& e) {
    spdlog::warn("auto: the attestation of backup {} cannot be read: {}", backup.name, e.what());
    return false;
  }
}

// Which change log segments an auto-restore replays: those a CA key here tagged; untagged ones
// too only where this host takes unsigned records; a forged tag never.
bool Controller::segment_accepted(const changelog::SegmentName& segment) const {
  std::lock_guard<std::mutex> lock(keyring_mu_);
  const RecordTrust trust = keyring_.check_tag(changelog::segment_tag_message(segment), segment.tag);
  return trust == RecordTrust::kAuthentic || (trust == RecordTrust::kUnsigned && options_.accept_unsigned_records);
}

void Controller::refuse_record(const std::string& why) {
  if (!refusals_said_.insert(why).second) return;
  if (refusals_said_.size() > 64) refusals_said_ = {why};
  spdlog::warn("auto: {}", why);
  record("ignore-record", why, "", "refused");
}

void Controller::record(const std::string& action, const std::string& reason, const std::string& command,
                        const std::string& outcome) {
  spdlog::info("auto: {} ({}): {}{}", action, outcome, reason, command.empty() ? "" : "; by hand: " + command);
  // The store keeps the last kEventsKept events: the same event again every round (a step that
  // keeps failing, a wait whose reason counts seconds) would push out the ones that explain an
  // incident. Repeats within kRepeatedEventGap are logged only, and counted in the next one written.
  const std::string shape = action + "|" + without_running_seconds(reason) + "|" + without_running_seconds(outcome);
  const auto now = steady_clock::now();
  auto [it, first] = repeats_.try_emplace(shape);
  if (!first && now - it->second.written < kRepeatedEventGap) {
    ++it->second.since;
    return;
  }
  std::string told = outcome;
  if (it->second.since > 0) {
    told += " (and " + std::to_string(it->second.since) + " time" + (it->second.since == 1 ? "" : "s") +
            " more since it was last recorded)";
  }
  it->second = {now, 0};
  if (repeats_.size() > 256)
    std::erase_if(repeats_, [&](const auto& r) { return now - r.second.written >= kRepeatedEventGap; });
  if (!store_reachable()) return;
  AutoEvent e{to_unix_micros(std::chrono::system_clock::now()), member_.name, action, reason, command, told};
  append_auto_event(*store_, e);
  if (++events_written_ % 50 == 0) {
    try {
      trim_auto_events(*store_, kEventsKept);
    } catch (const Error& err) {
      spdlog::warn("could not trim the events in {}: {}", store_->url(), err.what());
    }
  }
}

void Controller::recorded(const Decision& d, const std::function<void()>& step) {
  recorded_with(d, [&] {
    step();
    return std::string();
  });
}

void Controller::recorded_with(const Decision& d, const std::function<std::string()>& step) {
  std::string detail;
  try {
    detail = step();
    pool_.reset();
  } catch (const Error& e) {
    pool_.reset();
    record(step_name(d.step), d.reason, d.command, std::string("failed: ") + e.what());
    throw;
  }
  record(step_name(d.step), d.reason, d.command, detail.empty() ? "done" : "done: " + detail);
}

// A backup of the cluster precedes every membership change: a recent one when the store has it,
// else a new one from this host's member. No backup, no change.
void Controller::backup_before(const Decision& d, std::chrono::seconds max_age) {
  EtcdClient cluster(connection_to(member_, {member_.loopback_client_url()}));
  backup_through(d, max_age, cluster);
}

std::string Controller::backup_through(const Decision& d, std::chrono::seconds max_age, EtcdClient& cluster) {
  PreChangeBackupOptions b;
  b.max_age = max_age;
  b.save = options_.save;
  b.save.preferred_endpoint = member_.loopback_client_url();
  const std::string command = "etcdadm backup save --store " + store_->url();
  try {
    auto r = backup_before_change(cluster, *store_, &catalog_, b);
    if (r.saved) {
      try {
        attest_backup(*store_, *r.saved);
      } catch (const Error& e) {
        spdlog::error("auto: backup {} is not attested, so no auto-restore takes it: {}", r.name, e.what());
      }
    }
    if (r.taken)
      record("backup", std::string("before ") + step_name(d.step) + ": " + d.reason, command, "done: " + r.name);
    return r.name;
  } catch (const Error& e) {
    record("backup", std::string("before ") + step_name(d.step) + ": no change without a backup", command,
           std::string("failed: ") + e.what());
    throw;
  }
}

void Controller::act(const Decision& d, const Observation& o) {
  // A failed NOSPACE recovery is held against its own alarm only: once the cluster answers with no
  // NOSPACE (another controller recovered it, or a person), the next alarm is a new one, acted on
  // at once. (Found: a learner replaying the log that once filled the quota raised NOSPACE again
  // after a recovery, and the host whose earlier attempt had failed waited 10 minutes, every
  // other change held back behind it.)
  if (o.cluster.answered) {
    const auto alarms = alarms_in_status(o.cluster.info);
    if (std::none_of(alarms.begin(), alarms.end(), [](const MemberAlarm& a) { return a.alarm == "NOSPACE"; }))
      std::erase_if(maintenance_failed_, [](const auto& entry) {
        return entry.first.rfind(std::string(step_name(Step::kRecoverSpace)) + "|", 0) == 0;
      });
  }
  // A pause written while this round observed wins over what it decided; this host's own member
  // is started again even when the store cannot say (rule Q).
  if (d.step != Step::kIdle && d.step != Step::kWait) {
    std::optional<PauseRecord> pause;
    try {
      pause = read_pause(*store_);
    } catch (const Error& e) {
      if (d.step != Step::kStartLocalMember || e.kind() == ErrorKind::kInterrupted) throw;
    }
    if (pause) {
      spdlog::info("auto: paused while deciding to {}: not acting", step_name(d.step));
      return;
    }
  }
  switch (d.step) {
    case Step::kIdle:
    case Step::kWait:
      if (without_running_seconds(d.reason) != last_wait_reason_) {
        last_wait_reason_ = without_running_seconds(d.reason);
        if (d.step == Step::kWait) {
          record("wait", d.reason, d.command, "waiting");
        } else {
          spdlog::info("auto: {}", d.reason);
        }
      }
      return;
    case Step::kPlanCluster:
      plan_cluster(d);
      return;
    case Step::kStartPlannedMember:
      recorded(d, [&] { start_planned_member(d.plan); });
      return;
    case Step::kStartLocalMember:
      recorded(d, [&] { start_local_member(); });
      return;
    case Step::kJoinAsAdded:
      recorded(d, [&] { join_as_added(d, o); });
      return;
    case Step::kForgetMember:
      recorded(d, [&] { forget_member(d.set_aside); });
      return;
    case Step::kAddMember:
    case Step::kPromoteMember:
    case Step::kRemoveMember:
      change_membership(d, o);
      return;
    case Step::kPlanRestore:
      plan_restore(d, o);
      return;
    case Step::kRestoreMember:
      // A restore that failed (a damaged backup, a store down) fetches the whole backup again on
      // its next try.
      with_plan_backoff(d, [&] { recorded_with(d, [&] { return restore_planned_member(d.plan, o); }); });
      return;
    case Step::kPlanQuorumRecovery:
      plan_quorum_recovery(d, o);
      return;
    case Step::kRecoverQuorum:
      // A recovery that failed copied the member's data and started it in private: not every round.
      with_plan_backoff(d, [&] { recorded_with(d, [&] { return recover_quorum_here(d.plan); }); });
      return;
    case Step::kSetAsideData:
      recorded(d, [&] { set_aside_data(d.plan); });
      return;
    case Step::kFinishRestore:
      recorded(d, [&] { finish_restore(d, o); });
      store_view_.reset();
      return;
    case Step::kGiveVersionTurn:
      give_version_turn(d);
      return;
    case Step::kChangeVersion:
      change_version(d, o);
      return;
    case Step::kDefragment:
    case Step::kRecoverSpace:
      maintain(d, o);
      return;
    case Step::kDisarmCorrupt:
      disarm_corrupt(d);
      return;
    case Step::kRenewCerts:
    case Step::kCaSwitch:
      maintain(d, o);
      return;
    case Step::kCaReissue:
      ca_reissue(d, o);
      return;
    case Step::kStartCaRotation:
      if (still_leads(d)) start_ca_rotation(d);
      return;
    case Step::kCompleteCaRotation:
      if (still_leads(d)) complete_ca_rotation(d, o);
      return;
    case Step::kMarkCreated:
      mark_created(d);
      return;
  }
}

// This host's part of plan `d.plan` (seconds to minutes: said when it begins), unless its last
// failure asks to wait: tried again after 30 s, doubling to 10 minutes, not every round.
void Controller::with_plan_backoff(const Decision& d, const std::function<void()>& part) {
  auto& failed = restore_failures_[d.plan.sequence];
  if (failed.count > 0 && steady_clock::now() < failed.retry_at) {
    spdlog::debug("auto: plan {} failed {} time(s) here: tried again in {} s", d.plan.sequence, failed.count,
                  seconds_until(failed.retry_at));
    return;
  }
  spdlog::info("auto: {} (starting): {}", step_name(d.step), d.reason);
  try {
    part();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInterrupted) throw;
    ++failed.count;
    const auto wait = std::min<std::chrono::seconds>(
        kRestoreRetryMax, kRestoreRetryFirst * (1 << std::min<uint64_t>(failed.count - 1, 5)));
    failed.retry_at = steady_clock::now() + wait;
    spdlog::warn("auto: plan {} failed here ({} time(s)); trying again in {} s", d.plan.sequence, failed.count,
                 wait.count());
    throw;
  }
  store_view_.reset();
}

std::string Controller::metrics_text() const {
  Gauges g;
  {
    std::lock_guard<std::mutex> lock(gauges_mu_);
    g = gauges_;
  }
  PrometheusText out;
  out.gauge("etcdadm_auto_acting",
            "1 while this host's controller acts for the cluster (its member is the Raft leader).", g.acting);
  out.gauge("etcdadm_auto_waiting",
            "1 while the controller waits for a person or another host (auto status says for what).", g.waiting);
  out.gauge(
      "etcdadm_auto_total_loss",
      "1 while the store says a cluster was created, no member answers and no host holds its data: restore a backup "
      "(etcdadm etcd-manager restore-backup latest).",
      g.total_loss);
  out.gauge("etcdadm_auto_quorum_lost",
            "1 while the cluster has answered without a leader for longer than the spec's replaceAfter: a quorum lost "
            "for good (auto status names the survivors and the etcdadm recover to run).",
            g.quorum_lost);
  out.gauge("etcdadm_auto_paused", "1 while the controllers are paused (etcdadm auto pause).", g.paused);
  out.gauge("etcdadm_auto_last_round_timestamp_seconds", "Unix time of the controller's last completed round.",
            static_cast<double>(g.last_round_unix));
  out.gauge("etcdadm_auto_clock_skew_seconds",
            "The largest difference seen between another live host's clock and this host's (theirs minus this "
            "one's; the controllers warn from 30 s).",
            static_cast<double>(g.clock_skew_seconds));
  out.counter("etcdadm_auto_failed_rounds_total", "Rounds that failed (the store or the cluster did not answer).",
              g.failed_rounds);
  if (g.ca_expires_unix > 0) {
    out.gauge(
        "etcdadm_auto_ca_expiry_timestamp_seconds",
        "Unix time when the cluster CA on this host expires (auto status warns within the spec's caWarnBeforeSeconds).",
        static_cast<double>(g.ca_expires_unix));
  }
  return out.text();
}

Decision Controller::tick() {
  const auto round_start = steady_clock::now();
  Observation o = observe();
  // Leadership just came here (a hand-over, an election): the spec, plan or marker cached as a
  // follower may be older than what the last acting controller acted on (a shrink's spec: acted
  // on, it would add back the member just removed). Observed again on a fresh read, once.
  if (is_acting(o) && !was_acting_ && store_view_ && store_view_->read_at < round_start) {
    spdlog::info("auto: this host's member leads now: reading the store again before acting on it");
    store_view_.reset();
    o = observe();
  }
  was_acting_ = is_acting(o);
  Decision d = decide(o, new_cluster_token());
  d.hurry = hurried_round(o);
  // A rotation under way moves through the other hosts' records: the store is read every round.
  if (o.ca_rotation && o.ca_rotation->completed_unix == 0) d.settled = false;
  {
    std::lock_guard<std::mutex> lock(gauges_mu_);
    gauges_.acting = is_acting(o);
    gauges_.waiting = d.step == Step::kWait;
    gauges_.total_loss = d.total_loss;
    gauges_.quorum_lost = d.quorum_lost;
    gauges_.paused = o.pause.has_value();
    gauges_.last_round_unix = o.now_unix;
    gauges_.ca_expires_unix = o.local.ca_expires_unix;
    gauges_.clock_skew_seconds = o.clock_skew_seconds;
  }
  // The record first: a host that registers is counted by the others before it acts. Only its
  // local duties go on when the store refuses the record (the heartbeat never holds them back).
  // This host's own member is started again first: a store that hangs must not hold it back.
  const bool started_first = d.step == Step::kStartLocalMember;
  if (started_first) act(d, o);
  try {
    if (store_reachable() && o.name_conflict.empty()) write_host_record(o, d);
  } catch (const Error& e) {
    const bool local = d.step == Step::kIdle || d.step == Step::kWait || d.step == Step::kStartLocalMember;
    // kInUse: another host wrote this host's record; the next round finds out who.
    if (!local || e.kind() == ErrorKind::kInterrupted || e.kind() == ErrorKind::kInUse) throw;
    spdlog::warn("auto: could not write this host's record (its heartbeat) to {}: {}", store_->url(), e.what());
  }
  if (!started_first) act(d, o);
  pool_.forget_unused();
  return d;
}

void Controller::run() {
  InterruptibleWork work;
  spdlog::info("auto: controller of {} on store {} (CA {}...)", member_.name, store_->url(), ca_sha256_.substr(0, 12));
  auto stopping = [this] { return interrupted() || stop_requested_; };
  int rounds_without_pause = 0;
  while (!stopping()) {
    bool at_once = false;
    auto pause = options_.interval;
    try {
      Decision d = tick();
      settled_ = d.settled || d.waits_on_a_person;
      if (d.hurry) pause = std::min(pause, std::chrono::duration_cast<std::chrono::milliseconds>(kHurriedRound));
      // A plan, the marker or a version turn just written (or found written by another host) is followed at
      // once: this host's own part of it comes next, not an interval later. At most three rounds
      // in a row, so that nothing can spin.
      at_once = (d.step == Step::kPlanCluster || d.step == Step::kPlanRestore || d.step == Step::kMarkCreated ||
                 d.step == Step::kGiveVersionTurn) &&
                ++rounds_without_pause <= 3;
    } catch (const std::exception& e) {
      // Whatever failed (an Error, or a library's exception on input no check foresaw), the round
      // acted on nothing more: count it and start over, never end the controller's thread.
      if (const auto* err = dynamic_cast<const Error*>(&e); err != nullptr && err->kind() == ErrorKind::kInterrupted)
        break;
      settled_ = false;
      store_view_.reset();
      {
        std::lock_guard<std::mutex> lock(gauges_mu_);
        ++gauges_.failed_rounds;
      }
      spdlog::warn("auto: this round failed, nothing more is done until the next: {}", e.what());
    }
    if (at_once) continue;
    rounds_without_pause = 0;
    for (auto until = steady_clock::now() + pause; steady_clock::now() < until && !stopping();) {
      std::this_thread::sleep_for(
          std::min<steady_clock::duration>(std::chrono::milliseconds(100), until - steady_clock::now()));
    }
  }
  const int sig = interrupt_signal();
  spdlog::info("auto: stopped ({}); this host's etcd keeps running", sig == 15  ? "SIGTERM"
                                                                     : sig == 2 ? "SIGINT"
                                                                                : "asked to");
}

}  // namespace etcdadm

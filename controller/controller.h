// `etcdadm auto`: the controller that runs beside each control-plane host's member. Every tick it
// observes (the store's spec, plan, pause and host records; this host's data dir and etcd; the
// cluster through the members' client URLs), asks decide() what to do (controller/decide.h), does
// it, records it (a log line with the reason and the equivalent command, an event in the store),
// and writes its own host record (its heartbeat).
//
// This host's member is created and started through the lifecycle library (init's phases), so the
// member is the same one `etcdadm init` would make: same files, same init system, same certificates.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "backup/save.h"
#include "changelog/segment.h"
#include "controller/decide.h"
#include "etcd/client_pool.h"
#include "etcdadm/init_system.h"
#include "etcdadm/lifecycle/init_join.h"
#include "etcdadm/maintenance/defrag.h"
#include "store/backup_store.h"
#include "store/catalog.h"

namespace etcdadm {

// How long a request of the controller's to the store may move no byte before it fails and is
// retried (ObjectStoreSettings::idle_timeout; 60 s elsewhere): its records are small, and a round
// held by a hung request is a round in which this host's crashed etcd is not started again.
inline constexpr std::chrono::milliseconds kControllerStoreIdleTimeout{15000};

struct ControllerOptions {
  // This host's member: where it lives, how it runs, where etcd comes from. Its version is the
  // spec's (a plan's) when the controller creates it.
  LifecycleOptions lifecycle;
  std::chrono::milliseconds interval{2000};  // between rounds (the members are asked every round)
  // Between two reads of the store while the cluster is as the spec says (a pause, a new spec or
  // a new host is noticed within this); every round reads it while anything moves.
  std::chrono::milliseconds idle_interval{30000};
  std::chrono::seconds heartbeat{30};  // the host record is rewritten at least this often
  // A host whose record has not changed for this long, and whose heartbeat is older, is not live.
  std::chrono::seconds host_timeout{90};
  // Before each membership change the acting controller makes sure a backup of the cluster this
  // recent is in the store (one backup covers the steps of a resize), else it takes one.
  std::chrono::seconds pre_change_backup_age{600};
  // How those backups are written: the store request (a new store's compression, encryption,
  // modes) and compression level `etcdadm auto` was given, as its sidecar writes them.
  SaveOptions save;
  std::string catalog_path;  // "": etcdadm's default catalog
  // Records without an authenticator (a spec etcd-manager-ctl wrote, an etcdadm's that did not sign)
  // are acted on too; forged ones never are (controller/record_auth.h).
  bool accept_unsigned_records = false;
};

// <config-dir>/etcdadm-auto.json: which plan this host's data dir belongs to, and whether its
// member has ever started (from then on, empty data means lost data, never a fresh start).
struct AutoLocalState {
  std::string cluster_token;
  bool member_started = false;
  uint64_t member_id = 0;  // as its Status last said
  uint64_t cluster_id = 0;
  uint64_t plan_sequence = 0;  // LocalView::plan_sequence
  // The device (st_dev) the data dir was on when this host made its member there, or last saw it
  // hold the member's data (0: neither yet): an empty data dir on another device is an unmounted
  // volume, not lost data.
  uint64_t data_device = 0;
  bool operator==(const AutoLocalState&) const = default;
};

class Controller {
 public:
  Controller(BackupStore store, ControllerOptions options);

  // One observe-decide-act round; returns what was decided. Errors of the round are thrown (the
  // loop logs them and tries again next tick: nothing is acted on from a failed observation).
  Decision tick();
  // Ticks until SIGINT/SIGTERM (common/interrupt.h) or request_stop(), which another thread may
  // call (where a signal thread takes the signals: `auto` with its backups, sidecar/signals.h).
  void run();
  void request_stop() { stop_requested_ = true; }
  // For the sidecar beside the controller (another thread), with the CA key the controller signs
  // with: attests a backup the sidecar saved (controller/backup_attestation.h), and tags each
  // change log segment it writes (changelog/segment.h), so that an auto-restore can tell the
  // cluster's own backups and log from what a store writer planted.
  void attest_backup(BlobStore& store, const BackupMeta& saved);
  std::string tag_segment(const std::string& message);
  // What the sidecar's change log starts from and continues (thread-safe): an attested backup, a
  // tagged segment (or unsigned ones, with --accept-unsigned-records), as an auto-restore takes them.
  bool backup_attested(BlobStore& store, const BackupRecord& backup) const;
  bool segment_accepted(const changelog::SegmentName& segment) const;
  // The controller's gauges in Prometheus text (served beside the sidecar's on --listen): whether
  // it acts, waits, sees a total loss, is paused; its last round; its failed rounds. Any thread.
  std::string metrics_text() const;

  Observation observe();

 private:
  // ---- the round (controller.cc) ----
  void act(const Decision& d, const Observation& o);
  // ---- this host's own record (own_records.cc) ----
  void write_host_record(const Observation& o, const Decision& d);
  void write_own_record(const HostRecord& h);
  // Why this host's name is another host's now ("" when it is free or this host's): a record of
  // another host ID that this controller saw change within the host timeout, or has not watched
  // that long yet.
  std::string name_held_elsewhere() const;
  // Runs one local step and records it (done, or failed with the error, which is rethrown).
  void recorded(const Decision& d, const std::function<void()>& step);
  // The same, for a step whose outcome says more than "done" ("done: <what it returns>").
  void recorded_with(const Decision& d, const std::function<std::string()>& step);
  void record(const std::string& action, const std::string& reason, const std::string& command,
              const std::string& outcome);
  // A backup of the cluster no older than `max_age` in the store, taken now when there is none.
  void backup_before(const Decision& d, std::chrono::seconds max_age);
  // The same through `cluster` (a version change's own client); returns the backup's name.
  std::string backup_through(const Decision& d, std::chrono::seconds max_age, EtcdClient& cluster);

  // ---- observing (controller_observe.cc) ----
  LocalView observe_local();
  ClusterView observe_cluster(const std::vector<HostView>& hosts, const LocalView& local);
  void track_health(Observation& o);
  std::vector<HostView> judge_liveness(const std::vector<HostRecord>& records, int64_t now_unix);
  std::vector<std::string> other_members(const std::vector<HostView>& hosts) const;
  int64_t quorum_loss_log_end(const Observation& o);
  std::optional<int64_t> queued_backup_revision(const Observation& o);
  // Observation::replaced_cluster_leader: every other member asked on its own (the restored
  // cluster's members answer too, under another cluster ID).
  std::string replaced_cluster_leader(const Observation& o);
  // This host's member first, then the other hosts' members, with the etcdctl client certificate.
  ConnectionConfig members_connection(const std::vector<HostView>& hosts) const;

  // ---- creation (act_creation.cc) ----
  void plan_cluster(const Decision& d);
  void start_planned_member(const ClusterPlan& plan);
  void mark_created(const Decision& d);

  // ---- membership (act_membership.cc) ----
  void start_local_member();
  void join_as_added(const Decision& d, const Observation& o);
  // Stops this host's member and sets its data aside as `kind` says (kNone: deleted, there is
  // none to keep; kRemoved: only the newest kept).
  void forget_member(SetAside kind);
  // Stops this host's etcd (when it runs one) and moves its data out of the way, kept for a person.
  void stop_and_set_aside(const std::string& label);
  bool still_leads(const Decision& d);
  void change_membership(const Decision& d, const Observation& o);

  // ---- restores (act_restore.cc) ----
  void plan_restore(const Decision& d, const Observation& o);
  // Returns what it did: "started", or restored but not started while the cluster the plan
  // replaces has a leader (Observation::replaced_cluster_leader).
  std::string restore_planned_member(const ClusterPlan& plan, const Observation& seen);
  void set_aside_data(const ClusterPlan& plan);
  void with_plan_backoff(const Decision& d, const std::function<void()>& part);
  void plan_quorum_recovery(const Decision& d, const Observation& o);
  bool replace_plan(const Decision& d, const std::string& what);
  std::string recover_quorum_here(const ClusterPlan& plan);
  // The spec the command asks for (Decision::new_spec) written where it differs, then the command deleted.
  void finish_restore(const Decision& d, const Observation& o);
  void write_command_spec(const Decision& d, const Observation& o);
  // What an auto-restore would restore now: the newest attested backup and its tagged change log's
  // end (its bump sized for a gap widened by the clock skew seen between the hosts).
  Observation::AutoRestoreCandidate auto_restore_candidate(int64_t now_unix, int64_t clock_skew_seconds);

  // ---- versions (act_versions.cc) ----
  void observe_version_change(Observation& o);
  void give_version_turn(const Decision& d);
  void change_version(const Decision& d, const Observation& o);

  // ---- certificates and the CA (act_ca.cc; controller/ca_rotation.h) ----
  // kRenewCerts (through maintain(): the lease): renewed, then a new handshake with the member.
  void renew_own_certs(const Decision& d);
  // A new TLS connection to this host's member must answer with a leader (after its certificates changed).
  void check_member_handshake(const std::string& what);
  // This host's leaves re-issued (then a new handshake), its switch (through maintain(): the lease;
  // etcd restarted, leadership moved away first), a rotation started or completed (acting).
  void ca_reissue(const Decision& d, const Observation& o);
  void ca_switch(const Decision& d, const Observation& o);
  void start_ca_rotation(const Decision& d);
  void complete_ca_rotation(const Decision& d, const Observation& o);

  // ---- maintenance (act_maintenance.cc) ----
  // kDefragment and kRecoverSpace (and this host's kRenewCerts, kCaSwitch: the lease), each held
  // back kMaintenanceRetry after it failed with the same command.
  void maintain(const Decision& d, const Observation& o);
  void defragment(const Decision& d, const Observation& o);
  void recover_space(const Decision& d, const Observation& o);
  void record_member_defrag(const Decision& d, const DefragMemberResult& r);
  void update_maintenance(const std::function<void(MaintenanceRecord&)>& change);

  // ---- corruption (act_corruption.cc) ----
  // The voters' HashKV compared (acting, every voter healthy): every corrupt_check_seconds, and
  // every kCorruptAlarmCheck under etcd's CORRUPT alarm. The maintenance record is read when its
  // corrupt members matter: this host's member was removed, or the alarm may be disarmed.
  void observe_hashes(Observation& o);
  void disarm_corrupt(const Decision& d);

  BackupStore store_;
  ControllerOptions options_;
  Catalog catalog_;
  MemberConfig member_;
  std::unique_ptr<InitSystem> init_system_;
  // The members are asked every round: their connections are kept (reset after a local step,
  // which may have issued this host's certificates again).
  EtcdClientPool pool_;
  std::string ca_sha256_;
  // The CA keys this host holds (read again with every store view: a CA switch adds one), and a
  // rotation's new key once this host could open it: what makes and checks the records' authenticators.
  RecordKeyring keyring_;
  // Guards keyring_ against the sidecar's thread: taken by load_keyring (the only writer, on the
  // controller's thread) and by the sidecar's readers; the controller's own reads need no lock.
  mutable std::mutex keyring_mu_;
  std::string rotation_key_pem_;
  RecordPolicy record_policy() const { return {&keyring_, options_.accept_unsigned_records}; }
  RecordKeyring keyring_copy() const;
  void load_keyring();
  // A record this host will not act on, said once per reason (a refused record is read every round).
  void refuse_record(const std::string& why);
  std::set<std::string> refusals_said_;
  // The highest spec generation this host obeyed or saw a host obey (HostRecord::spec_generation).
  uint64_t spec_generation_ = 0;
  std::string host_id_;         // HostRecord::host_id
  std::string record_version_;  // of this host's record as it last wrote it ("": not claimed yet)
  struct Seen {
    uint64_t sequence = 0;
    std::chrono::steady_clock::time_point changed;  // its last change seen (epoch: none yet)
    std::chrono::steady_clock::time_point first;    // when this controller first read it
  };
  // What the store said at its last read (observe()).
  struct StoreView {
    std::chrono::steady_clock::time_point read_at;
    std::optional<EtcdManagerClusterSpec> spec;
    AutoSpec auto_spec;
    std::optional<PauseRecord> pause;
    bool created_marker = false;
    std::optional<ClusterPlan> plan;
    std::string plan_version;  // as read (read_versioned): a restore plan replaces exactly this one
    std::optional<EtcdManagerCommand> restore_command;
    std::string restore_db_sha256;  // the backup digest its approval binds ("" when unsigned ones are accepted)
    // Observation::record_problems; with `reachable` false, the store itself could not be read
    // (the view is then empty, and read again next round).
    std::vector<std::string> problems;
    bool reachable = true;
    std::vector<HostRecord> hosts;
    std::vector<std::string> unreadable_hosts;  // Observation::unreadable_host_records
    MaintenanceRecord maintenance;              // read only while the spec has a defrag schedule
    std::optional<CaRotationRecord> ca_rotation;
    // Records not acted on (the record policy refused them), each a sentence; taken as absent.
    std::vector<std::string> refused;
    uint64_t spec_generation = 0;  // of the spec obeyed (0: none, or unsigned accepted)
  };
  StoreView read_store_view(const std::string& store_url);
  // Whether the last read of the store succeeded: a store that cannot be read is not written
  // either (a local store's directory renamed away is not made again empty by a heartbeat).
  bool store_reachable() const { return !store_view_ || store_view_->reachable; }
  std::optional<StoreView> store_view_;
  std::string turn_version_;  // the version turn as read this round: the next replaces exactly it
  // The last round found nothing the store could change soon: the cluster as the spec says, or a
  // wait for a person (Decision::waits_on_a_person). The store is then read every idle interval.
  bool settled_ = false;
  // Whether the last round's controller acted for the cluster (its member led). One that takes
  // over may hold a store view read while it was settled as a follower, up to an idle interval
  // old: it reads the store again before its first round as the acting controller.
  bool was_acting_ = false;
  std::map<std::string, Seen> seen_;  // host -> when its record last changed, as this host saw it
  // How long this controller has known a record written with another host's clock, by an identity
  // of it ("plan 4", "lease defrag m2 1800000000"): the first call starts the count.
  int64_t known_for(const std::string& identity);
  std::map<std::string, std::chrono::steady_clock::time_point> first_known_;
  // Another host's clock minus this one's, by host, estimated when its record was seen changing.
  std::map<std::string, int64_t> clock_skew_;
  int64_t reported_skew_ = 0;                        // the largest skew last logged
  static constexpr int64_t kClockSkewReported = 30;  // seconds
  std::optional<std::chrono::steady_clock::time_point> quorum_since_;
  std::optional<std::chrono::steady_clock::time_point> removal_since_;
  std::map<uint64_t, std::chrono::steady_clock::time_point> unhealthy_since_;  // while acting
  std::map<uint64_t, std::chrono::steady_clock::time_point> learner_since_;    // while acting
  // By unhealthy member: its host record's sequence at the first store read after it became
  // unhealthy (Observation::rewritten_since_unhealthy).
  std::map<uint64_t, uint64_t> unhealthy_baseline_;
  // Peer URL -> when this controller replaced the member there (Observation::replaced_seconds_ago).
  std::map<std::string, std::chrono::steady_clock::time_point> replaced_at_;
  // When this controller last compared the voters' HashKV (while acting; a controller that starts
  // acting compares at once).
  std::optional<std::chrono::steady_clock::time_point> last_hash_check_;
  // This host's last start of its etcd (kStartLocalMember): the init system's output mark taken
  // just before, and when; and why etcd refused to start since (kept until it answers with a leader).
  std::string start_mark_;
  std::optional<std::chrono::steady_clock::time_point> last_start_;
  std::string refused_;
  std::optional<std::chrono::steady_clock::time_point> total_loss_since_;
  std::optional<std::chrono::steady_clock::time_point> unanswered_since_;
  // Since when this controller has seen a lost quorum (quorum_loss), and the change log's end it
  // last read for it (read again at most every kQuorumLossLogRead).
  std::optional<std::chrono::steady_clock::time_point> quorum_lost_since_;
  uint64_t led_since_plan_sequence_ = 0;  // the newest plan sequence under which a leader was seen
  std::optional<std::chrono::steady_clock::time_point> quorum_loss_log_read_;
  int64_t quorum_loss_log_end_ = 0;
  // "<command key> <backup>" and that backup's recorded revision (queued_backup_revision).
  std::optional<std::pair<std::string, std::optional<int64_t>>> queued_backup_revision_;
  // Each host's record sequence at the first store read after the quorum was lost (the baseline of
  // Observation::rewritten_since_quorum_loss); empty while there is no loss.
  std::optional<std::map<std::string, uint64_t>> quorum_loss_baseline_;
  static constexpr std::chrono::seconds kQuorumLossLogRead{60};
  static constexpr std::chrono::seconds kCorruptAlarmCheck{10};
  HostRecord last_written_;
  std::chrono::steady_clock::time_point last_heartbeat_{};
  uint64_t sequence_ = 0;
  std::string last_wait_reason_;
  // "<step>|<command>" -> when that maintenance step last failed.
  static constexpr std::chrono::minutes kMaintenanceRetry{10};
  std::map<std::string, std::chrono::steady_clock::time_point> maintenance_failed_;
  // By restore plan sequence: how often this host's part of it failed, and when it is tried again.
  static constexpr std::chrono::seconds kRestoreRetryFirst{30};
  static constexpr std::chrono::seconds kRestoreRetryMax{600};
  struct RestoreFailures {
    uint64_t count = 0;
    std::chrono::steady_clock::time_point retry_at;
  };
  std::map<uint64_t, RestoreFailures> restore_failures_;
  uint64_t events_written_ = 0;
  // The events recorded lately, by their shape (action, reason and outcome without running
  // seconds): when each was last written to the store, and how many repeats were not since.
  static constexpr std::chrono::minutes kRepeatedEventGap{5};
  struct Repeat {
    std::chrono::steady_clock::time_point written;
    uint64_t since = 0;
  };
  std::map<std::string, Repeat> repeats_;
  std::atomic<bool> stop_requested_{false};
  // What metrics_text() reports, set after every round.
  struct Gauges {
    bool acting = false, waiting = false, total_loss = false, quorum_lost = false, paused = false;
    int64_t last_round_unix = 0;
    uint64_t failed_rounds = 0;
    int64_t ca_expires_unix = 0;
    int64_t clock_skew_seconds = 0;
  };
  mutable std::mutex gauges_mu_;
  Gauges gauges_;
};

AutoLocalState read_auto_local_state(const std::string& config_dir);
// <config-dir>/etcdadm-auto-host-id: HostRecord::host_id, made the first time a controller runs on
// the host and never changed (apart from the member's state, which is rewritten as members come
// and go).
std::string load_or_make_host_id(const std::string& config_dir);
void write_auto_local_state(const std::string& config_dir, const AutoLocalState& state);

}  // namespace etcdadm

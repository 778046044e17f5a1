#include "cmd/auto_commands.h"

#include <unistd.h>

#include <iostream>
#include <memory>
#include <thread>

#include "cmd/invocation.h"
#include "cmd/member_flags.h"
#include "cmd/output.h"
#include "cmd/sidecar_flags.h"
#include "cmd/store_flags.h"
#include "common/error.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "controller/adopt.h"
#include "controller/ca_rotation.h"
#include "controller/controller.h"
#include "controller/records.h"
#include "controller/status.h"
#include "etcd/client.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/lifecycle/static_pod_member.h"
#include "etcdadm/member_health.h"
#include "render/auto_control.h"
#include "render/seed_result.h"
#include "sidecar/sidecar.h"
#include "sidecar/sidecar_http.h"
#include "sidecar/signals.h"
#include "store/etcd_manager.h"

namespace etcdadm::cli {

namespace {

// A duration flag of seed in seconds: nullopt when not given (the spec's value is kept), 0 for "0".
std::optional<int64_t> seconds_flag(const char* flag, const std::string& value) {
  if (value.empty()) return std::nullopt;
  if (value == "0") return 0;
  return duration_flag(flag, value, false).count();
}

void add_seed(CLI::App& app) {
  struct Flags {
    StoreFlags store;
    int members = 0;
    std::string version;
    std::string replace_after;
    std::optional<int> defrag_free_percent;
    std::optional<int64_t> defrag_min_free_mib;
    std::optional<std::string> defrag_schedule;
    std::optional<int64_t> nospace_keep_revisions;
    std::optional<int> nospace_disarm_below_percent;
    std::string corrupt_check_interval;
    std::string auto_restore;
    std::string restart_without_quorum;
    std::string auto_restore_delay;
    std::string recover_quorum;
    std::string certs_dir = MemberConfig{}.certs_dir;
    std::string cert_renew_before;
    std::string ca_warn_before;
    std::string ca_rotate_before;
    bool dry_run = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c =
      app.add_subcommand("seed",
                         "write the cluster spec the controllers (etcdadm auto) converge to: its member count and "
                         "etcd version, in etcd-manager's format and place; run again to change either");
  f->store.add_to(c);
  c->add_option("--members", f->members, "members of the cluster (1-9; kept when not given)")->check(CLI::Range(1, 9));
  c->add_option("--version", f->version, "etcd version the members run, e.g. 3.5.17 (kept when not given)");
  c->add_option("--replace-after", f->replace_after,
                "replace a member unhealthy this long (default 10m; kept when not given)");
  auto* m = c->add_option_group("Maintenance (defragmentation, NOSPACE, corrupt members)");
  m->add_option("--defrag-free-percent", f->defrag_free_percent,
                "defragment a member once this share of its db file is free (default 50; 0: only on the schedule; "
                "kept when not given)")
      ->check(CLI::Range(0, 100));
  m->add_option("--defrag-min-free-mib", f->defrag_min_free_mib,
                "and at least this many MiB are (default 100; kept when not given)")
      ->check(CLI::NonNegativeNumber);
  m->add_option("--defrag-schedule", f->defrag_schedule,
                "also defragment every member on this schedule (cron, @daily, @every 72h; \"\" removes it; kept when "
                "not given)");
  m->add_option("--nospace-keep-revisions", f->nospace_keep_revisions,
                "on etcd's NOSPACE alarm, compact keeping this many revisions below the current one (default 1000; "
                "kept when not given)")
      ->check(CLI::NonNegativeNumber);
  m->add_option("--nospace-disarm-below-percent", f->nospace_disarm_below_percent,
                "disarm NOSPACE only when every member's db file is then under this share of its quota (default 90; "
                "kept when not given)")
      ->check(CLI::Range(1, 100));
  m->add_option("--corrupt-check-interval", f->corrupt_check_interval,
                "compare every voter's HashKV this often and replace a member whose data differs from a majority "
                "that agrees, its data kept aside (default 5m; 0: never; kept when not given)");
  m->add_option("--cert-renew-before", f->cert_renew_before,
                "each host renews its member's certificates once the first expires within this long, one host at a "
                "time, no restart (default 720h; 0: never; kept when not given)");
  m->add_option("--ca-warn-before", f->ca_warn_before,
                "warn (log, metric, auto status) once the cluster CA expires within this long (default 2160h; kept "
                "when not given)");
  m->add_option("--ca-rotate-before", f->ca_rotate_before,
                "rotate the cluster CA once it expires within this long: a new CA cross-signed by the current one, "
                "every host re-issued, then switched and restarted one at a time; clients still on the old CA keep "
                "working until it expires, the time they have to be restarted on the new one (default 8760h; 0: "
                "only by `auto rotate-ca`; kept when not given)");
  m->add_option("--restart-without-quorum", f->restart_without_quorum,
                "on: a 1- or 2-member cluster's member may be restarted by its controller (the CA switch), "
                "stopping writes for the seconds of the restart; off (the default): the step waits for a person")
      ->check(CLI::IsMember({"on", "off"}));
  auto* r = c->add_option_group("Recovery from a total loss or a lost quorum");
  r->add_option(
       "--auto-restore", f->auto_restore,
       "on: after a total loss (no member answers, no host holds a member's data, for --auto-restore-delay) "
       "the hosts restore the newest backup their controllers attested and its change log to its end, at once, "
       "without a person (backups and log segments anyone else wrote are passed over). The trade-off: the "
       "cluster comes back minutes after a loss at the last revision the log holds (a few seconds' writes "
       "may be missing), and nobody checks first that it is the point to restore; off (the default): the "
       "hosts wait and say what to run")
      ->check(CLI::IsMember({"on", "off"}));
  r->add_option("--auto-restore-delay", f->auto_restore_delay,
                "how long a total loss must last before the restore (default 5m; kept when not given)");
  r->add_option(
       "--recover-quorum", f->recover_quorum,
       "on: after a lost quorum (the cluster answers without a leader for --replace-after) whose members that do "
       "not answer are all on hosts whose records say they hold no data (rebuilt hosts), the survivor furthest along "
       "becomes a cluster of one (etcdadm recover, with the change log when it reaches further) and the other hosts "
       "join it, without a person. The trade-off: what the lost members had committed beyond the survivor and the log "
       "is lost; a host that may still hold data and cannot be asked (its record not live) blocks it, as a majority "
       "behind a partition would otherwise go on as a second cluster. Off (the default): the hosts report the loss "
       "and name the commands")
      ->check(CLI::IsMember({"on", "off"}));
  c->add_option("--certs-dir", f->certs_dir,
                "where the cluster's ca.key is: the spec is signed with it, and the controllers obey no other")
      ->capture_default_str();
  c->add_flag("--dry-run", f->dry_run, "show the spec and what the controllers would do, change nothing");
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    auto store = f->store.open();
    EtcdManagerClusterSpec changes{f->members, f->version.empty() ? "" : normalise_version(f->version)};
    AutoSpecChanges auto_changes;
    if (!f->replace_after.empty()) {
      auto_changes.replace_after_seconds = duration_flag("--replace-after", f->replace_after, false).count();
    }
    auto_changes.defrag_free_percent = f->defrag_free_percent;
    if (f->defrag_min_free_mib) auto_changes.defrag_min_free_bytes = *f->defrag_min_free_mib << 20;
    auto_changes.defrag_schedule = f->defrag_schedule;
    auto_changes.nospace_keep_revisions = f->nospace_keep_revisions;
    auto_changes.nospace_disarm_below_percent = f->nospace_disarm_below_percent;
    if (!f->auto_restore.empty()) auto_changes.auto_restore = f->auto_restore == "on";
    if (!f->restart_without_quorum.empty()) auto_changes.restart_without_quorum = f->restart_without_quorum == "on";
    if (!f->recover_quorum.empty()) auto_changes.recover_quorum = f->recover_quorum == "on";
    auto_changes.cert_renew_before_seconds = seconds_flag("--cert-renew-before", f->cert_renew_before);
    auto_changes.ca_warn_before_seconds = seconds_flag("--ca-warn-before", f->ca_warn_before);
    auto_changes.ca_rotate_before_seconds = seconds_flag("--ca-rotate-before", f->ca_rotate_before);
    auto_changes.auto_restore_delay_seconds = seconds_flag("--auto-restore-delay", f->auto_restore_delay);
    auto_changes.corrupt_check_seconds = seconds_flag("--corrupt-check-interval", f->corrupt_check_interval);
    const SeedResult r =
        seed_cluster_spec(*store, changes, auto_changes, RecordKeyring::of_certs_dir(f->certs_dir), f->dry_run);
    if (fmt == OutputFormat::kJson)
      std::cout << render::seed_result_json(r, f->dry_run).dump(2) << "\n";
    else
      std::cout << render::seed_result_text(r, f->dry_run);
  });
}

// The controller in a thread of its own and the backup sidecar beside it, which backs up only
// while this host's member leads (leader-only, like the controller's acting). The signal thread
// takes SIGTERM/SIGINT (stop both; a running backup may finish within --shutdown-grace, a running
// controller step finishes), SIGUSR1 (a backup now) and SIGHUP (credentials read again).
template <typename Flags>
void run_with_backups(const Flags& f, ControllerOptions o) {
  SidecarSignals signals;  // before any other thread exists
  const MemberConfig member = o.lifecycle.member;
  Controller controller(f.store.open(kControllerStoreIdleTimeout),
                        std::move(o));  // issues this host's certificates first
  auto store = f.store.open();
  Catalog catalog = f.store.open_catalog();
  EtcdClient client(local_connection(member));
  auto prepared = prepare_sidecar(f.sidecar, f.store, store, catalog, member.loopback_client_url());
  prepared->options.more_metrics = [&controller] { return controller.metrics_text(); };
  // What the sidecar writes is signed as the cluster's own: only attested backups and tagged
  // segments are restored without a person (docs/security.md).
  prepared->options.attest = [&controller, &store](const BackupMeta& saved) {
    controller.attest_backup(*store, saved);
  };
  if (auto& log = prepared->options.continuous) {
    log->capture.segment_tagger = [&controller](const std::string& message) { return controller.tag_segment(message); };
    log->backup_accepted = [&controller, &store](const BackupRecord& b) {
      return controller.backup_attested(*store, b);
    };
    log->segment_accepted = [&controller](const changelog::SegmentName& s) { return controller.segment_accepted(s); };
  }
  Sidecar sidecar(client, *store, &catalog, prepared->options);
  std::unique_ptr<SidecarHttp> http;
  if (!f.sidecar.listen.empty())
    http = std::make_unique<SidecarHttp>(sidecar, f.sidecar.listen, prepared->trigger_token);
  std::thread loop([&] { controller.run(); });
  struct StopController {
    Controller& c;
    std::thread& t;
    ~StopController() {
      c.request_stop();
      t.join();
    }
  } stop_controller{controller, loop};
  signals.run(sidecar, {&*store, prepared->copy_store ? &**prepared->copy_store : nullptr});
}

void add_run(CLI::App* c) {
  struct Flags {
    StoreFlags store;
    MemberFlags member;
    std::string interval = "2s";
    std::string idle_interval = "30s";
    std::string heartbeat = "30s";
    bool accept_unsigned_records = false;
    bool backups = true;
    SidecarFlags sidecar;
    std::string kubeadm_manifest;
  };
  auto f = std::make_shared<Flags>();
  f->store.add_to(c, /*with_output=*/false);
  f->member.add_to(c);
  c->add_option(
      "--kubeadm-manifest", f->kubeadm_manifest,
      "this host's member is the one kubeadm's static pod manifest runs (/etc/kubernetes/manifests/etcd.yaml): "
      "its name, address, ports, data and certificates folders and the kubelet init system come from the "
      "manifest; etcdadm's files for it go into --config-dir (the manifest is left until the controllers "
      "change the member; then they write their own). Then `etcdadm auto adopt` (docs/self-management.md)");
  auto* b = c->add_option_group("Backups (the sidecar's, run on the acting controller's host: the Raft leader's)");
  b->add_flag("--backups,!--no-backups", f->backups,
              "back up on --schedule with --retention, as `etcdadm backup sidecar` does (default true); the backup "
              "before each membership change is taken either way");
  f->sidecar.listen =
      "";  // several hosts' controllers may share a machine in tests; the sidecar's default is 127.0.0.1:9791
  f->sidecar.add_to(b, f->store, /*with_any_member=*/false);
  auto* g = c->add_option_group("Controller");
  g->add_option("--interval", f->interval, "between rounds (the members are asked every round)")->capture_default_str();
  g->add_option("--idle-interval", f->idle_interval,
                "between reads of the store while the cluster is as the spec says (every round otherwise)")
      ->capture_default_str();
  g->add_option("--heartbeat", f->heartbeat, "this host's record in the store is rewritten at least this often")
      ->capture_default_str();
  g->add_flag("--accept-unsigned-records", f->accept_unsigned_records,
              "act on records no CA holder signed too: a spec etcd-manager-ctl configure-cluster wrote, a restore "
              "it queued, records of an etcdadm that did not sign them. Anyone who can write to the store then "
              "commands the cluster (docs/security.md); forged records are refused either way");
  c->callback([f, c] {
    if (!c->get_subcommands().empty()) return;  // status, pause, resume
    ControllerOptions o;
    o.lifecycle = f->member.options();
    if (!f->kubeadm_manifest.empty()) {
      MemberConfig base = o.lifecycle.member;
      base.version = f->member.release.version.empty() ? "" : normalise_version(f->member.release.version);
      o.lifecycle.member = static_pod_member(f->kubeadm_manifest, base);
      o.lifecycle.release.version = o.lifecycle.member.version;
    }
    o.interval = duration_flag("--interval", f->interval, false);
    o.idle_interval = duration_flag("--idle-interval", f->idle_interval, false);
    o.heartbeat = duration_flag("--heartbeat", f->heartbeat, false);
    o.catalog_path = f->store.catalog;
    o.accept_unsigned_records = f->accept_unsigned_records;
    // The backups before changes are written as the sidecar's: a store they create first gets the
    // compression and encryption `auto` was given.
    o.save.store = f->sidecar.creation.request(f->store.passphrase());
    o.save.compression_level = f->sidecar.creation.level;
    if (!f->backups) {
      f->store.require_lockable(f->store.store);
      SidecarSignals signals;  // before any other thread exists
      auto store = f->store.open(kControllerStoreIdleTimeout);
      Controller controller(store, std::move(o));
      std::thread loop([&] { controller.run(); });
      signals.wait_for_stop([&] { controller.request_stop(); }, {&*store});
      loop.join();
      return;
    }
    run_with_backups(*f, std::move(o));
  });
}

void add_status(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    int events = 10;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand("status", "the spec, the hosts, what each waits for, and the last actions");
  f->store.add_to(c);
  c->add_option("--events", f->events, "how many of the last events to show")
      ->capture_default_str()
      ->check(CLI::Range(0, 500));
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    auto store = f->store.open();
    AutoStatus status = read_auto_status(*store, static_cast<size_t>(f->events));
    if (fmt == OutputFormat::kJson) {
      std::cout << auto_status_json(status).dump(2) << "\n";
    } else {
      std::cout << auto_status_text(status);
    }
  });
}

void add_pause_resume(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    std::string reason;
  };
  auto pf = std::make_shared<Flags>();
  auto* p = group.add_subcommand("pause", "stop every controller of this store from acting (they keep reporting)");
  pf->store.add_to(p, /*with_output=*/false);
  p->add_option("--reason", pf->reason, "why, shown by `auto status` and in every controller's log");
  p->callback([pf] {
    auto store = pf->store.open();
    PauseRecord pause{
        user_at_host(), pf->reason,
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()};
    store->write_small(kAutoPauseKey, pause_record_json(pause), /*overwrite=*/true);
    append_auto_event(*store, AutoEvent{to_unix_micros(std::chrono::system_clock::now()), pause.by, "pause",
                                        pause.reason, "etcdadm auto pause", "done"});
    std::cout << render::auto_paused_text(store->url());
  });
  auto rf = std::make_shared<Flags>();
  auto* r = group.add_subcommand("resume", "let the controllers act again");
  rf->store.add_to(r, /*with_output=*/false);
  r->callback([rf] {
    auto store = rf->store.open();
    store->remove(kAutoPauseKey);
    append_auto_event(*store, AutoEvent{to_unix_micros(std::chrono::system_clock::now()), user_at_host(), "resume", "",
                                        "etcdadm auto resume", "done"});
    std::cout << render::auto_resumed_text(store->url());
  });
}

void add_rotate_ca(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    std::string certs_dir = MemberConfig{}.certs_dir;
    std::string reason;
  };
  auto f = std::make_shared<Flags>();
  auto* c =
      group.add_subcommand("rotate-ca",
                           "start a rotation of the cluster CA: a new CA, cross-signed by the current one, sealed into "
                           "the store for the hosts that hold the current CA; their controllers re-issue every "
                           "member's certificates, then switch to the new CA one host at a time (docs/operations.md)");
  f->store.add_to(c, /*with_output=*/false);
  c->add_option("--certs-dir", f->certs_dir, "the directory with the cluster's current ca.crt and ca.key")
      ->capture_default_str();
  c->add_option("--reason", f->reason, "why, shown by `auto status` and in every controller's log");
  c->callback([f] {
    auto store = f->store.open();
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    const CaRotationRecord r =
        new_ca_rotation(f->certs_dir, user_at_host(), f->reason.empty() ? "started by a person" : f->reason, now);
    if (auto other = write_new_ca_rotation(*store, r)) {
      throw Error(ErrorKind::kAlreadyExists,
                  "CA rotation " + other->id + " (started by " + other->started_by + ") is under way",
                  "follow it with `etcdadm auto status --store " + store->url() +
                      "`; a new one can start once it is completed");
    }
    append_auto_event(*store, AutoEvent{to_unix_micros(std::chrono::system_clock::now()), r.started_by,
                                        "start-ca-rotation", r.reason, "etcdadm auto rotate-ca", "done"});
    std::cout << render::ca_rotation_started_text(r, store->url());
  });
}

void add_approve_restore(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    std::string certs_dir = MemberConfig{}.certs_dir;
    std::string command;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand(
      "approve-restore",
      "approve a queued restore command (one etcd-manager-ctl queued): the controllers carry out only restores "
      "approved with the cluster CA's key; `etcdadm etcd-manager restore-backup` approves its own");
  f->store.add_to(c, /*with_output=*/false);
  c->add_option("command", f->command,
                "the command's key as `etcdadm etcd-manager list-commands` shows it (default: "
                "the oldest queued restore)");
  c->add_option("--certs-dir", f->certs_dir, "where the cluster's ca.key is")->capture_default_str();
  c->callback([f] {
    auto store = f->store.open();
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    Catalog catalog = f->store.open_catalog();
    const ApprovedRestore approved = approve_restore_command(
        store, catalog, f->command, RecordKeyring::of_certs_dir(f->certs_dir), user_at_host(), now);
    const RestoreApproval& a = approved.approval;
    append_auto_event(*store,
                      AutoEvent{to_unix_micros(std::chrono::system_clock::now()), a.approved_by, "approve-restore",
                                a.command_key + ": backup " + a.backup + " (db SHA-256 " + a.backup_db_sha256 +
                                    (approved.verified ? ", verified" : ", as its metadata records it") +
                                    (approved.not_attested.empty() ? ", attested)" : ", not attested)"),
                                "etcdadm auto approve-restore " + a.command_key, "done"});
    std::cout << render::restore_approved_text(approved);
  });
}

void add_adopt(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    std::string certs_dir = MemberConfig{}.certs_dir;
    std::string endpoints;
    bool dry_run = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand(
      "adopt",
      "hand a running cluster that the controllers did not create (made with etcdadm init/join, by kubeadm) to "
      "the controllers of this store, in place: refused unless it is healthy and every member's host runs etcdadm "
      "auto with the cluster's CA; writes the spec (from what runs, unless seed wrote one), a plan of purpose "
      "adopt and the created marker (docs/self-management.md)");
  f->store.add_to(c);
  c->add_option("--certs-dir", f->certs_dir,
                "the cluster's ca.crt and ca.key (which sign the records) and an etcdctl-etcd-client certificate")
      ->capture_default_str();
  c->add_option("--endpoints", f->endpoints,
                "client URLs of the cluster, comma-separated (default: those of the hosts' records)");
  c->add_flag("--dry-run", f->dry_run, "check and say what would be written; write nothing");
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    auto store = f->store.open();
    MemberConfig certs;
    certs.certs_dir = f->certs_dir;
    AdoptRequest request;
    request.connection = connection_to(certs, split_list(f->endpoints));
    request.ca_sha256 = ca_fingerprint(certs.ca_cert());
    request.host_timeout = ControllerOptions{}.host_timeout;
    request.by = user_at_host();
    request.now_unix =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    request.dry_run = f->dry_run;
    const AdoptResult r = adopt_running_cluster(*store, RecordKeyring::of_certs_dir(f->certs_dir), request);
    if (fmt == OutputFormat::kJson) {
      std::cout << render::adoption_json(r, f->dry_run).dump(2) << "\n";
    } else {
      std::cout << render::adoption_text(r, store->url(), f->dry_run);
    }
  });
}

}  // namespace

void add_auto_commands(CLI::App& app) {
  add_seed(app);
  auto* c = app.add_subcommand("auto",
                               "run this host's controller: register in the store, create the cluster with the other "
                               "hosts, keep this host's member running (docs/self-management.md)");
  add_run(c);
  add_status(*c);
  add_pause_resume(*c);
  add_rotate_ca(*c);
  add_adopt(*c);
  add_approve_restore(*c);
}

}  // namespace etcdadm::cli

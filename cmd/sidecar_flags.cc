#include "cmd/sidecar_flags.h"

#include "backup/retention.h"
#include "backup/schedule.h"
#include "common/environment.h"
#include "common/fs.h"
#include "sidecar/checks.h"
#include "sidecar/sidecar_http.h"

namespace etcdadm::cli {

void SidecarFlags::add_to(CLI::App* c, StoreFlags& store, bool with_any_member) {
  c->add_option("--schedule", schedule,
                "cron (5 fields, UTC; 'CRON_TZ=Europe/Berlin 0 2 * * *' for a zone), @hourly/@daily/@weekly, '@every "
                "15m' or '15m'")
      ->capture_default_str();
  if (with_any_member)
    c->add_flag("--any-member", any_member, "back up from every member's sidecar, not only the leader's");
  c->add_option("--retention", retention,
                "after each backup: etcd-manager | count:N | gfs:H,D,W,M (default: keep all)");
  c->add_flag("--keep-noncurrent-versions", keep_versions, kKeepVersionsHelp);
  c->add_option("--verify", verify, "read each backup back and check it: always | never | every:N")
      ->capture_default_str();
  c->add_option("--listen", listen, "HTTP address for /healthz /readyz /metrics /backups, POST /backup ('' = off)")
      ->capture_default_str();
  c->add_option(
      "--trigger-token-file", token_file,
      "file holding the bearer token POST /backup requires (and, beyond loopback, GET /metrics and /backups)");
  c->add_option("--ready-max-age", ready_max_age, "/readyz fails when the newest backup is older")
      ->capture_default_str();
  c->add_option("--shutdown-grace", grace, "on SIGTERM, how long a running backup may take to finish")
      ->capture_default_str();
  creation.add_to(c);
  store.add_key_flags(c, /*identities=*/true);  // identities: --verify reads the snapshot inside
  c->add_option("--stall-timeout", stall, "abort when the member sends no data for this long")->capture_default_str();
  c->add_option("--clean-abandoned-after", abandoned, "remove leftovers of killed saves this old (0: never)")
      ->capture_default_str();
  auto* g = c->add_option_group("Continuous backup (the change log: point-in-time restores, RPO in seconds)");
  g->add_flag("--continuous", continuous,
              "keep the change log beside the snapshots: every revision, in segments under changelog/ (the writing "
              "member's sidecar; docs/operations.md)");
  g->add_option("--segment-interval", segment_interval, "cut a change log segment at least this often")
      ->capture_default_str();
  g->add_option("--segment-size", segment_size_mib, "or once its records reach this many MiB")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  g->add_option("--max-rpo", max_rpo, "/readyz fails when the newest revision in the store is older than this")
      ->capture_default_str();
  g->add_option("--heartbeat-interval", heartbeat_interval,
                "on a quiet cluster, record this often that the log is complete (so --to-time can target the quiet "
                "time; one small object overwritten; 0: never)")
      ->capture_default_str();
  auto* cp = c->add_option_group("A second copy (docs/operations.md: the 3-2-1 layout)");
  cp->add_option("--copy-to", copy_to,
                 "after each backup, copy the backups this store lacks (with their change log) to this second store; "
                 "failures are counted and retried at the next backup");
  cp->add_option("--copy-retention", copy_retention,
                 "the second store's own retention, applied after each copy (default: --retention's)");
  auto* d = c->add_option_group("Restore drills (docs/operations.md: proving a backup restores)");
  drill.cache_dir = user_cache_dir();
  d->add_option("--drill-schedule", drill_schedule,
                "drill the newest intact backup on this schedule (as --schedule), from the writing member's sidecar: "
                "restore it into a scratch dir, start a private etcd on it, check what it serves; results in the "
                "store, `backup list` and /metrics");
  d->add_option("--drill-scratch-dir", drill.scratch_parent, "where drills restore (default $TMPDIR, else /tmp)");
  d->add_option("--drill-etcd-binary", drill.etcd_binary,
                "the etcd drills start (default: the etcd on PATH of the backup's minor, else the release cache)");
  d->add_option("--drill-cache-dir", drill.cache_dir, "the release cache drills take etcd from")->capture_default_str();
}

std::unique_ptr<PreparedSidecar> prepare_sidecar(const SidecarFlags& f, const StoreFlags& store,
                                                 const BackupStore& backups, Catalog& catalog,
                                                 const std::string& member_endpoint) {
  // With --copy-to, the lock may be meant for the second store (an S3 copy of a local store).
  if (f.copy_to.empty() || parse_store_url(f.copy_to).scheme != StoreUrl::Scheme::kS3) {
    store.require_lockable(store.store);
  }
  auto out = std::make_unique<PreparedSidecar>();
  SidecarOptions& o = out->options;
  o.schedule = Schedule::parse(f.schedule);
  apply_schedule_time_zone(o.schedule);  // sets TZ: the caller is still single-threaded
  o.leader_only = !f.any_member;
  if (!f.retention.empty()) o.retention = parse_retention_policy(f.retention, Environment::from_process());
  o.prune.keep_noncurrent_versions = f.keep_versions;
  o.verify_every = parse_verify_every(f.verify);
  o.ready_max_age = duration_flag("--ready-max-age", f.ready_max_age, false);
  o.shutdown_grace = duration_flag("--shutdown-grace", f.grace, true);
  o.save.store = f.creation.request(store.passphrase());
  o.save.compression_level = f.creation.level;
  o.save.stall_timeout = duration_flag("--stall-timeout", f.stall, false);
  o.save.clean_abandoned_after = duration_flag("--clean-abandoned-after", f.abandoned, true);
  out->trigger_token = f.token_file.empty() ? "" : read_trigger_token(f.token_file);
  if (f.continuous) {
    ChangeLogLoopOptions lo;
    lo.leader_only = o.leader_only;
    lo.capture.segment_interval = std::chrono::duration_cast<std::chrono::milliseconds>(
        duration_flag("--segment-interval", f.segment_interval, false));
    lo.capture.segment_bytes = static_cast<uint64_t>(f.segment_size_mib) << 20;
    lo.capture.heartbeat_interval = std::chrono::duration_cast<std::chrono::milliseconds>(
        duration_flag("--heartbeat-interval", f.heartbeat_interval, true));
    lo.max_rpo = duration_flag("--max-rpo", f.max_rpo, false);
    lo.writer = o.save.store.encryption;
    o.continuous = lo;
  }
  o.member_endpoint = member_endpoint;
  if (o.continuous) o.continuous->member_endpoint = o.member_endpoint;
  o.verify = verify_after_backup(backups, catalog);
  if (!f.drill_schedule.empty()) {
    o.drill_schedule = Schedule::parse(f.drill_schedule);
    if (o.drill_schedule->time_zone() != o.schedule.time_zone() && !o.drill_schedule->time_zone().empty()) {
      throw Error(ErrorKind::kInvalidArgument, "--drill-schedule names another time zone than --schedule",
                  "give both in the same CRON_TZ (the process has one time zone)");
    }
    o.drill = drill_backup(backups, catalog, f.drill);
  }
  if (!f.copy_to.empty()) {
    StoreFlags second = store;
    second.store = f.copy_to;
    out->copy_store = second.open();
    BlobStore& copy = **out->copy_store;
    if (copy.url() == backups->url())
      throw Error(ErrorKind::kInvalidArgument, "--copy-to is the store itself: " + copy.url());
    o.copy_to = copy.url();
    o.copy_store = &copy;
    o.copy = copy_new_backups_to(backups, catalog, copy);
    o.copy_retention = f.copy_retention.empty()
                           ? o.retention
                           : std::optional(parse_retention_policy(f.copy_retention, Environment::from_process()));
  }
  return out;
}

}  // namespace etcdadm::cli

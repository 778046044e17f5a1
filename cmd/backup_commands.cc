#include "cmd/backup_commands.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "backup/prune.h"
#include "backup/rekey.h"
#include "backup/save.h"
#include "cmd/connection_flags.h"
#include "cmd/inspect_commands.h"
#include "cmd/invocation.h"
#include "cmd/output.h"
#include "cmd/restore_flags.h"
#include "cmd/sidecar_flags.h"
#include "cmd/store_flags.h"
#include "common/cpu_priority.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/text.h"
#include "etcd/etcd_version.h"
#include "render/backup_list.h"
#include "render/backup_verification.h"
#include "render/copy_result.h"
#include "render/drill_report.h"
#include "render/pin_change.h"
#include "render/prune_result.h"
#include "render/rekey_result.h"
#include "render/restore_result.h"
#include "render/saved_backup.h"
#include "restore/backup_copy.h"
#include "restore/damage.h"
#include "restore/data_dir.h"
#include "restore/drill.h"
#include "restore/fetch.h"
#include "restore/new_cluster.h"
#include "restore/resolve.h"
#include "restore/static_pod_restore.h"
#include "restore/verify.h"
#include "sidecar/checks.h"
#include "sidecar/sidecar.h"
#include "sidecar/sidecar_http.h"
#include "sidecar/signals.h"
#include "store/audience.h"
#include "store/catalog.h"
#include "store/encryption.h"
#include "store/store_url.h"

namespace etcdadm::cli {

namespace {

void print_saved(const SaveResult& r, OutputFormat fmt) {
  if (fmt == OutputFormat::kJson)
    std::cout << render::saved_backup_json(r).dump(2) << "\n";
  else
    std::cout << render::saved_backup_text(r);
}

void add_save(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    ConnectionFlags conn;
    StoreCreationFlags creation;
    std::string prefer, stall = "30s", abandoned = "24h";
    int nice = 0;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand("save", "stream a snapshot from a healthy member into the store");
  f->store.add_to(c);
  f->conn.add_to(c);
  c->add_option("--prefer-endpoint", f->prefer, "take the snapshot from this member when it is healthy");
  f->creation.add_to(c);
  f->store.add_key_flags(c, /*identities=*/false);
  c->add_option("--stall-timeout", f->stall, "abort when the member sends no data for this long");
  c->add_option("--nice", f->nice,
                "run the save at this nice level (0-19; the compression worker runs 10 levels lower still)")
      ->capture_default_str()
      ->check(CLI::Range(0, 19));
  c->add_option("--clean-abandoned-after", f->abandoned,
                "remove uploads/temp files that killed saves left behind once they are this old (0: never)")
      ->capture_default_str();
  c->callback([f] {
    SaveOptions o;
    o.clean_abandoned_after = duration_flag("--clean-abandoned-after", f->abandoned, true);
    o.preferred_endpoint = f->prefer;
    o.store = f->creation.request(f->store.passphrase());
    o.compression_level = f->creation.level;
    o.stall_timeout = duration_flag("--stall-timeout", f->stall, false);
    auto fmt = parse_output_format(f->store.output);
    set_process_nice(f->nice);  // before any worker thread exists, so they all inherit it
    f->store.require_lockable(f->store.store);
    auto store = f->store.open();
    EtcdClient client(f->conn.resolve());
    Catalog catalog = f->store.open_catalog();
    print_saved(save_backup(client, *store, &catalog, o), fmt);
  });
}

void add_import(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    StoreCreationFlags creation;
    std::string file, etcd_version;
    bool skip_hash_check = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand("import", "store a snapshot file (e.g. from `etcdctl snapshot save`) as a backup");
  c->add_option("file", f->file, "snapshot file")->required();
  f->store.add_to(c);
  f->creation.add_to(c);
  f->store.add_key_flags(c, /*identities=*/true);  // to read a snapshot file encrypted with age
  c->add_option("--etcd-version", f->etcd_version, "etcd version that wrote the snapshot (recorded in the metadata)");
  c->add_flag("--skip-hash-check", f->skip_hash_check, "accept a db without SHA-256 trailer (copied from a data dir)");
  c->callback([f] {
    ImportOptions o;
    o.store = f->creation.request(f->store.passphrase());
    o.compression_level = f->creation.level;
    o.skip_hash_check = f->skip_hash_check;
    o.etcd_version = f->etcd_version;
    auto fmt = parse_output_format(f->store.output);
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    print_saved(import_snapshot(f->file, store, &catalog, o), fmt);
  });
}

void add_list(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    bool rebuild = false;
    bool resync = false;
    bool history = false;
    int limit = 50;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand("list", "list the backups in a store, newest first");
  f->store.add_to(c);
  c->add_flag("--rebuild-catalog", f->rebuild, "drop this store's catalog entries and re-read every backup's metadata");
  c->add_flag("--resync", f->resync,
              "list the whole store now (otherwise done when the last full listing is older than "
              "ETCDADM_CATALOG_FULL_SYNC, default 1h; in between only backups newer than the catalog's are listed)");
  c->add_flag("--history", f->history, "list this host's backup attempts (successes and failures) instead");
  c->add_option("--limit", f->limit, "with --history: how many attempts")->capture_default_str();
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    if (f->history) {
      auto attempts = catalog.attempts(store->url(), f->limit);
      if (fmt == OutputFormat::kJson)
        std::cout << render::attempt_list_json(attempts).dump(2) << "\n";
      else
        std::cout << render::attempt_list_text(attempts);
      return;
    }
    if (f->rebuild)
      catalog.rebuild(*store);
    else
      catalog.sync(*store, f->resync ? SyncDepth::kFull : SyncDepth::kAuto);
    auto backups = catalog.backups(store->url());
    auto windows = log_windows(*store, backups);
    if (fmt == OutputFormat::kJson)
      render::write_backup_list_json(std::cout, backups, windows);
    else
      std::cout << render::backup_list_text(backups, windows, std::chrono::system_clock::now());
  });
}

void add_verify(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    std::string query;
    bool shallow = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand(
      "verify", "read a backup back, check every hash and walk every bucket of its snapshot, without restoring it");
  c->add_option("backup", f->query, "backup name, unique prefix, or 'latest'")->required();
  c->add_flag("--shallow", f->shallow,
              "only check the hashes (no temporary copy, no structural check); of an encrypted backup without its "
              "key, the stored bytes' SHA-256 and the age header");
  f->store.add_to(c);
  f->store.add_key_flags(c, /*identities=*/true);
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    BackupRecord b = find_backup(*store, catalog, f->query);
    render::BackupVerification v;
    v.backup = b;
    v.store_url = store->url();
    const VerifyDepth depth = reachable_depth(store, b, f->shallow ? VerifyDepth::kHashes : VerifyDepth::kStructure);
    v.stored_bytes_only = depth == VerifyDepth::kStoredBytes;
    with_damage_recorded(
        *store, catalog, b, [&] { v.fetch = verify_to_depth(store, b, depth, &catalog, &v.structure); },
        same_command_for(f->query));
    // Then the change log that extends it (a damaged segment is not the snapshot's damage: it is
    // not recorded as such, and the message says the snapshot is intact).
    try {
      v.change_log = verify_change_log(store, b, /*decrypt=*/!v.stored_bytes_only);
    } catch (const changelog::SegmentError& e) {
      throw Error(e.kind(), "backup " + b.name + " is intact, but its change log is not: " + e.what(),
                  e.hint().empty() ? "point-in-time restores can reach only revisions before that segment" : e.hint());
    }
    if (fmt == OutputFormat::kJson)
      std::cout << render::backup_verification_json(v).dump(2) << "\n";
    else
      std::cout << render::backup_verification_text(v);
  });
}

void add_drill(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    std::string query = "latest", start_timeout = "2m", to_revision, to_time;
    DrillOptions drill;
  };
  auto f = std::make_shared<Flags>();
  f->drill.cache_dir = user_cache_dir();
  auto* c = backup.add_subcommand(
      "drill",
      "prove a backup restores: restore it into a scratch dir, start a private etcd on it, check what it serves");
  c->add_option("backup", f->query, "backup name, unique prefix, or 'latest'")->capture_default_str();
  f->store.add_to(c);
  f->store.add_key_flags(c, /*identities=*/true);
  c->add_option("--scratch-dir", f->drill.scratch_parent,
                "where the private data dir goes (needs room for the db plus 192 MiB; default $TMPDIR, else /tmp)");
  c->add_option(
      "--etcd-binary", f->drill.etcd_binary,
      "the etcd to start (default: the etcd on PATH when it is of the backup's minor, else the release cache)");
  c->add_option("--cache-dir", f->drill.cache_dir, "the release cache to take etcd from (etcdadm download --cache-dir)")
      ->capture_default_str();
  c->add_option("--start-timeout", f->start_timeout, "how long etcd may take to serve the restored data")
      ->capture_default_str();
  c->add_option("--to-revision", f->to_revision,
                "drill the backup with its change log replayed up to this revision; 'end': the newest revision the "
                "store can bring back");
  c->add_option("--to-time", f->to_time,
                "drill the state at this time (RFC 3339, or relative: -10m) through the change log");
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    f->drill.point_in_time = point_in_time_from_flags(f->to_revision, f->to_time, std::chrono::system_clock::now());
    auto timeout = parse_duration(f->start_timeout);
    if (!timeout || timeout->count() <= 0) {
      throw Error(ErrorKind::kInvalidArgument, "--start-timeout " + f->start_timeout + " is not a duration",
                  "e.g. 90s, 5m");
    }
    f->drill.start_timeout = std::chrono::duration_cast<std::chrono::seconds>(*timeout);
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    BackupRecord b = find_backup_for(*store, catalog, f->query, f->drill.point_in_time);
    DrillReport r = run_drill(store, b, f->drill);
    record_drill_result(*store, &catalog, b, r);
    if (fmt == OutputFormat::kJson)
      std::cout << drill_report_json(r).dump(2) << "\n";
    else
      std::cout << render::drill_report_text(r);
    if (!r.passed) throw Error(r.failure_kind, "drill of backup " + b.name + " failed: " + r.failure, r.failure_hint);
  });
}

// The backups `backup copy` takes from the source, oldest first (a copy killed midway leaves the
// older ones whole): a name or prefix, 'latest', --all, or --since a time.
std::vector<BackupRecord> backups_to_copy(BlobStore& from, Catalog& catalog, const std::string& query, bool all,
                                          const std::string& since) {
  const int given = (query.empty() ? 0 : 1) + (all ? 1 : 0) + (since.empty() ? 0 : 1);
  if (given != 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "backup copy needs exactly one of: a backup name (or 'latest'), --all, --since TIME");
  }
  std::vector<BackupRecord> out;
  if (!query.empty()) {
    out.push_back(find_backup(from, catalog, query));
    return out;
  }
  catalog.sync(from, SyncDepth::kFull);
  const int64_t from_micros =
      since.empty() ? 0 : to_unix_micros(parse_point_in_time(since, std::chrono::system_clock::now()));
  for (const auto& b : catalog.backups(from.url())) {
    if (b.taken_at_micros >= from_micros) out.push_back(b);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

void add_copy(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    std::string query, since, to;
    bool all = false, no_change_log = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand(
      "copy", "copy backups (and their change log) to a second store, verified on the way, never a half copy");
  c->add_option("backup", f->query, "backup name, unique prefix, or 'latest'");
  c->add_flag("--all", f->all, "every backup in the source");
  c->add_option("--since", f->since, "the backups taken at or after this time (RFC 3339, or relative: -24h)");
  c->add_option("--from", f->store.store, "the source store (as --store)");
  c->add_option("--to", f->to, "the target store: any store URL; a new one gets the source's settings")->required();
  c->add_flag("--no-change-log", f->no_change_log,
              "copy the backups only, not the change-log segments that extend them");
  f->store.add_to(c);
  f->store.add_key_flags(c, /*identities=*/true);  // only for etcd-manager's backups, which record no stored digest
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    if (f->store.store.empty()) throw Error(ErrorKind::kInvalidArgument, "no source store", "give it with --from URL");
    auto from = f->store.open();
    StoreFlags target = f->store;
    target.store = f->to;
    target.require_lockable(f->to);
    auto to = target.open();
    if (to->url() == from->url())
      throw Error(ErrorKind::kInvalidArgument, "--from and --to are the same store: " + to->url());
    Catalog catalog = f->store.open_catalog();
    auto selected = backups_to_copy(*from, catalog, f->query, f->all, f->since);
    prepare_copy_target(*from, *to);
    CopyResult r = copy_backups(from, &catalog, *to, selected, !f->no_change_log);
    const auto& damaged = r.damaged;
    sync_after(&catalog, *to, "backup copy");
    if (fmt == OutputFormat::kJson)
      std::cout << render::copy_result_json(r, from->url(), to->url()).dump(2) << "\n";
    else
      std::cout << render::copy_result_text(r, to->url());
    if (!damaged.empty()) {
      throw Error(ErrorKind::kCorrupt, std::to_string(damaged.size()) + " backup(s) not copied: " + damaged.front(),
                  "they are damaged in the source and marked so; the others were copied");
    }
  });
}

void add_restore(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    std::string query, output_file, to_revision, to_time, kubeadm_manifest, stop_timeout = "2m";
    RestoreOptions restore;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand("restore", "restore a backup into a new etcd data dir (or fetch it with --output)");
  c->add_option("backup", f->query, "backup name, unique prefix, or 'latest'")->required();
  f->store.add_to(c);
  f->store.add_key_flags(c, /*identities=*/true);
  c->add_option("--to-revision", f->to_revision,
                "point in time: the snapshot, then its change log replayed up to exactly this revision ("
                "with the backup 'latest': the newest backup at or before it whose log reaches it); 'end': as far as "
                "the change log reaches (the newest state in the store)");
  c->add_option("--to-time", f->to_time,
                "point in time: the state at this time (RFC 3339, or relative: -10m): every revision received by then");
  c->add_option("--data-dir", f->restore.data_dir, "data dir to create (must be absent or empty unless --force)");
  // One name for the file and one for the format: `--output json` must not write a file named json.
  c->add_option("--output-file,--output", f->output_file,
                "only fetch the verified snapshot into this file (not the format: -o)")
      ->check([](const std::string& v) -> std::string {
        for (const char* format : {"json", "table", "simple", "yaml", "fields", "protobuf", "raw"}) {
          if (v == format) return "'" + v + "' is an output format: use -o " + v + " (--output-file takes a file)";
        }
        return "";
      });
  c->add_option("--kubeadm-manifest", f->kubeadm_manifest,
                "restore the member the kubelet runs from this static pod manifest (kubeadm's "
                "/etc/kubernetes/manifests/etcd.yaml), as kubeadm's runbook does: verified first, the manifest moved "
                "aside until the kubelet stopped etcd, the old data set aside, the backup restored as the manifest's "
                "member into its data dir, the manifest back (docs/operations.md)");
  c->add_option("--stop-timeout", f->stop_timeout,
                "with --kubeadm-manifest: how long the kubelet may take to stop etcd once its manifest is parked "
                "(then the manifest goes back and nothing is changed)")
      ->capture_default_str();
  c->add_option("--name", f->restore.name, "member name")->capture_default_str();
  c->add_option("--initial-cluster", f->restore.initial_cluster,
                "name=peerURL,... (default: <name>=<advertise peer URL>)");
  c->add_option("--initial-advertise-peer-urls", f->restore.initial_advertise_peer_urls, "this member's peer URLs")
      ->capture_default_str();
  c->add_option("--initial-cluster-token", f->restore.initial_cluster_token, "token of the new cluster")
      ->capture_default_str();
  c->add_flag("--force", f->restore.force, "replace a non-empty data dir / an existing output file");
  add_restore_method_flags(c, f->restore.method);
  c->add_option("--restore-tool", f->restore.restore_tool, "path to etcdutl (3.5+) or etcdctl (3.4): restore with it");
  c->add_option("--target-version", f->restore.target_version,
                "etcd version the restored member will run (default: the etcd on PATH, else the snapshot's; with "
                "--restore-with, the tool's); a restore etcd does not "
                "support across versions is refused before anything is written")
      ->check([](const std::string& v) {
        return EtcdVersion::parse(v) ? std::string() : "'" + v + "' is not an etcd version (3.6.16)";
      });
  c->callback([f, c] {
    auto fmt = parse_output_format(f->store.output);
    if ((f->restore.data_dir.empty() ? 0 : 1) + (f->output_file.empty() ? 0 : 1) +
            (f->kubeadm_manifest.empty() ? 0 : 1) !=
        1) {
      throw Error(ErrorKind::kInvalidArgument, "give exactly one of --data-dir, --output-file and --kubeadm-manifest");
    }
    if (f->kubeadm_manifest.empty() && c->count("--stop-timeout") > 0) {
      throw Error(ErrorKind::kInvalidArgument, "--stop-timeout goes with --kubeadm-manifest");
    }
    if (!f->kubeadm_manifest.empty()) {
      for (const char* from_manifest : {"--name", "--initial-advertise-peer-urls", "--force", "--restore-tool"}) {
        if (c->count(from_manifest) > 0) {
          throw Error(ErrorKind::kInvalidArgument,
                      std::string(from_manifest) +
                          " does not go with --kubeadm-manifest: the member, its data dir "
                          "and its etcd are the manifest's, and the old data is set aside");
        }
      }
    }
    if (!f->output_file.empty() && f->restore.method.any_given()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "--restore-with, --bump-revision, --mark-compacted and --keep-revision go with --data-dir "
                  "(--output-file writes the "
                  "snapshot as it was saved)");
    }
    f->restore.point_in_time = point_in_time_from_flags(f->to_revision, f->to_time, std::chrono::system_clock::now());
    const PointInTime& pit = f->restore.point_in_time;
    if (pit.given() && !f->output_file.empty()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "--to-revision and --to-time go with --data-dir (the replay writes a data dir)");
    }
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    BackupRecord b = find_backup_for(*store, catalog, f->query, pit);
    if (!f->output_file.empty()) {
      FetchResult r;
      with_damage_recorded(
          *store, catalog, b, [&] { r = fetch_verified(store, b, f->output_file, f->restore.force); },
          same_command_for(f->query));
      if (fmt == OutputFormat::kJson) {
        std::cout << render::fetched_snapshot_json(b.name, store->url(), f->output_file, r).dump(2) << "\n";
      } else {
        std::cout << render::fetched_snapshot_text(b.name, f->output_file, r);
      }
      return;
    }
    if (!f->kubeadm_manifest.empty()) {
      StaticPodRestoreOptions o;
      o.manifest = f->kubeadm_manifest;
      if (c->count("--initial-cluster") > 0) o.initial_cluster = f->restore.initial_cluster;
      if (c->count("--initial-cluster-token") > 0) o.initial_cluster_token = f->restore.initial_cluster_token;
      o.method = f->restore.method;
      o.point_in_time = f->restore.point_in_time;
      o.target_version = f->restore.target_version;
      o.stop_timeout = duration_flag("--stop-timeout", f->stop_timeout, false);
      StaticPodRestoreResult r;
      with_damage_recorded(
          *store, catalog, b, [&] { r = restore_static_pod_member(store, b, o); }, same_command_for(f->query));
      if (fmt == OutputFormat::kJson)
        std::cout << render::static_pod_restore_json(r, store->url()).dump(2) << "\n";
      else
        std::cout << render::static_pod_restore_text(r);
      return;
    }
    RestoreResult r;
    with_damage_recorded(
        *store, catalog, b, [&] { r = restore_to_data_dir(store, b, f->restore); }, same_command_for(f->query));
    if (fmt == OutputFormat::kJson)
      std::cout << render::restore_result_json(r, store->url()).dump(2) << "\n";
    else
      std::cout << render::restore_result_text(r, f->restore.name);
  });
}

void add_prune(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    std::string policy = "etcd-manager";
    PruneOptions prune;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand("prune", "delete the backups a retention policy does not keep");
  f->store.add_to(c);
  c->add_option("--policy", f->policy, "etcd-manager | count:N | gfs:HOURLY,DAILY,WEEKLY,MONTHLY")
      ->capture_default_str();
  c->add_flag("--dry-run", f->prune.dry_run, "only show what would be deleted");
  c->add_flag("--keep-noncurrent-versions", f->prune.keep_noncurrent_versions, kKeepVersionsHelp);
  c->add_flag("--allow-no-recent-backup", f->prune.allow_no_recent_backup,
              "prune even when no whole backup younger than the policy's shortest period would be left (refused "
              "otherwise: backups are failing, or this host's clock is ahead)");
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    RetentionPolicy policy = parse_retention_policy(f->policy, Environment::from_process());
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    PruneResult r = prune_backups(*store, &catalog, policy, std::chrono::system_clock::now(), f->prune);
    if (fmt == OutputFormat::kJson)
      std::cout << render::prune_result_json(r, policy.describe()).dump(2) << "\n";
    else
      std::cout << render::prune_result_text(r, policy.describe(), f->prune.keep_noncurrent_versions);
  });
}

void add_rekey(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    RecipientFlags recipients;
    std::string new_passphrase_file;
    std::vector<std::string> queries;
    bool all = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand(
      "rekey",
      "change who can open an encrypted store's backups: new recipients for later saves, and existing backups "
      "re-wrapped for them (the age header only; the payload is not re-encrypted)");
  c->add_option("backups", f->queries, "backups to rekey (name, unique prefix or 'latest')");
  c->add_flag("--all", f->all, "rekey every backup not yet encrypted to the store's recipients");
  f->store.add_to(c);
  f->store.add_key_flags(c, /*identities=*/true);
  f->recipients.add_to(c, "the store's new recipients (replacing the old ones)", /*env=*/false);
  c->add_option("--new-passphrase-file", f->new_passphrase_file,
                "file (mode 0600) holding the store's new passphrase (instead of recipients)");
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    if (f->all && !f->queries.empty()) throw Error(ErrorKind::kInvalidArgument, "give backup names or --all, not both");
    RekeyOptions o;
    if (f->recipients.given() || !f->new_passphrase_file.empty()) {
      EncryptionRequest to;
      to.x25519 = f->recipients.recipients();
      if (!f->new_passphrase_file.empty()) to.passphrase = load_passphrase_file(f->new_passphrase_file);
      o.new_recipients = to;
    }
    if (!o.new_recipients && !f->all && f->queries.empty()) {
      throw Error(
          ErrorKind::kInvalidArgument, "nothing to do",
          "give new recipients (--encrypt-to, --encrypt-to-file, --new-passphrase-file), backups to rekey, or --all");
    }
    o.current_passphrase = f->store.passphrase();
    o.all = f->all;
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    for (const auto& q : f->queries) o.names.push_back(find_backup(*store, catalog, q).name);
    RekeyResult r = rekey_backups(store, &catalog, o);
    if (fmt == OutputFormat::kJson)
      std::cout << render::rekey_result_json(r).dump(2) << "\n";
    else
      std::cout << render::rekey_result_text(r, f->all);
  });
}

void add_pin(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand(
      "pin",
      "accept the audience (age recipients, passphrase, or none) a store's marker names now: this host refuses to "
      "write for any other until `backup rekey` here or `backup pin` again changes it (docs/security.md)");
  f->store.add_to(c);
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    PinChange change = pin_store_audience(*store, catalog);
    if (fmt == OutputFormat::kJson)
      std::cout << render::pin_change_json(change, store->url()).dump(2) << "\n";
    else
      std::cout << render::pin_change_text(change, store->url());
  });
}

void add_sidecar(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    ConnectionFlags conn;
    SidecarFlags sidecar;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand("sidecar", "run beside an etcd member: scheduled, leader-aware, retained backups");
  f->store.add_to(c, /*with_output=*/false);
  f->conn.add_to(c);
  f->sidecar.add_to(c, f->store, /*with_any_member=*/true);
  c->callback([f] {
    SidecarSignals signals;  // before any other thread exists
    ConnectionConfig cc = f->conn.resolve();
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    EtcdClient client(cc);
    auto prepared = prepare_sidecar(f->sidecar, f->store, store, catalog, cc.endpoints.front());
    Sidecar sidecar(client, *store, &catalog, prepared->options);
    std::unique_ptr<SidecarHttp> http;
    if (!f->sidecar.listen.empty())
      http = std::make_unique<SidecarHttp>(sidecar, f->sidecar.listen, prepared->trigger_token);
    signals.run(sidecar, {&*store, prepared->copy_store ? &**prepared->copy_store : nullptr});
  });
}

}  // namespace

void add_backup_commands(CLI::App& app) {
  auto* backup = app.add_subcommand("backup", "save, list, verify, restore and prune backups");
  backup->require_subcommand(1);
  add_save(*backup);
  add_import(*backup);
  add_list(*backup);
  add_verify(*backup);
  add_restore(*backup);
  add_drill(*backup);
  add_copy(*backup);
  add_prune(*backup);
  add_rekey(*backup);
  add_pin(*backup);
  add_sidecar(*backup);
  add_inspect_commands(*backup);
}

}  // namespace etcdadm::cli

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
#include "sidecar/checks.h"
#include "sidecar/sidecar.h"
#include "sidecar/sidecar_http.h"
#include "sidecar/signals.h"
#include "cmd/connection_flags.h"
#include "cmd/inspect_commands.h"
#include "cmd/invocation.h"
#include "cmd/output.h"
#include "cmd/restore_flags.h"
#include "cmd/sidecar_flags.h"
#include "restore/new_cluster.h"
#include "cmd/store_flags.h"
#include "render/backup_record.h"
#include "render/json.h"
#include "common/cpu_priority.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/text.h"
#include "etcd/etcd_version.h"
#include "restore/damage.h"
#include "restore/backup_copy.h"
#include "restore/data_dir.h"
#include "restore/drill.h"
#include "restore/fetch.h"
#include "restore/resolve.h"
#include "restore/verify.h"
#include "store/audience.h"
#include "store/catalog.h"
#include "store/encryption.h"
#include "store/store_url.h"

namespace etcdadm::cli {

namespace {

void print_saved(const SaveResult& r, OutputFormat fmt) {
  if (fmt == OutputFormat::kJson) {
    auto j = render::backup_record_json(record_from_meta(r.meta));
    j["store"] = r.store_url;
    j["durationSeconds"] = r.meta.duration_seconds;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "Saved backup " << r.meta.name << " to " << r.store_url << "\n"
            << "  revision " << (r.meta.revision ? std::to_string(*r.meta.revision) : "unknown")
            << ", db " << human_bytes(r.meta.db_size) << ", stored " << human_bytes(r.meta.stored_size) << " ("
            << compression_name(r.meta.compression) << "), sha256 " << r.meta.db_sha256 << "\n";
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
      print_attempts(catalog.attempts(store->url(), f->limit), fmt);
      return;
    }
    if (f->rebuild) catalog.rebuild(*store);
    else catalog.sync(*store, f->resync ? SyncDepth::kFull : SyncDepth::kAuto);
    auto backups = catalog.backups(store->url());
    print_backups(backups, fmt, log_windows(*store, backups));
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
    std::optional<VerifyResult> deep;
    FetchResult r;
    const VerifyDepth depth = reachable_depth(store, b, f->shallow ? VerifyDepth::kHashes : VerifyDepth::kStructure);
    const bool stored_only = depth == VerifyDepth::kStoredBytes;
    with_damage_recorded(*store, catalog, b, [&] { r = verify_to_depth(store, b, depth, &catalog, &deep); },
                         same_command_for(f->query));
    // Then the change log that extends it (a damaged segment is not the snapshot's damage: it is
    // not recorded as such, and the message says the snapshot is intact).
    ChangeLogCheck log;
    try {
      log = verify_change_log(store, b, /*decrypt=*/!stored_only);
    } catch (const changelog::SegmentError& e) {
      throw Error(e.kind(), "backup " + b.name + " is intact, but its change log is not: " + e.what(),
                  e.hint().empty() ? "point-in-time restores can reach only revisions before that segment" : e.hint());
    }
    if (fmt == OutputFormat::kJson) {
      // One schema whatever was checked: what a shallow or keyless check did not read is null.
      const bool read_db = !stored_only;
      nlohmann::json j{{"backup", b.name},
                       {"store", store->url()},
                       {"ok", true},
                       {"structure", deep ? "checked" : "skipped"},
                       {"decrypted", read_db && b.encrypted()},
                       {"storedSize", r.stored_bytes},
                       {"storedSha256", r.stored_sha256},
                       {"dbSize", read_db ? nlohmann::json(r.digest.db_bytes) : nlohmann::json(nullptr)},
                       {"dbSha256", read_db ? nlohmann::json(r.digest.db_sha256) : nlohmann::json(nullptr)},
                       {"hashTrailer", read_db ? nlohmann::json(r.digest.has_trailer) : nlohmann::json(nullptr)},
                       {"revision", deep ? nlohmann::json(deep->status.revision) : nlohmann::json(nullptr)},
                       {"totalKey", deep ? nlohmann::json(deep->status.total_key) : nlohmann::json(nullptr)},
                       {"liveKeys", deep ? nlohmann::json(deep->live_keys) : nlohmann::json(nullptr)},
                       {"hash", deep ? nlohmann::json(deep->status.hash) : nlohmann::json(nullptr)},
                       {"totalSize", deep ? nlohmann::json(deep->status.total_size) : nlohmann::json(nullptr)},
                       {"changeLog", log.segments > 0 ? change_log_check_json(log) : nlohmann::json(nullptr)}};
      std::cout << j.dump(2) << "\n";
      return;
    }
    if (stored_only) {
      std::cout << "Backup " << b.name << ": stored bytes intact (" << human_bytes(r.stored_bytes) << ", sha256 "
                << r.stored_sha256 << "), age header well-formed\n"
                << "  not decrypted (no --identity): the snapshot inside is not checked\n";
      print_change_log_check(log);
      return;
    }
    std::cout << "Backup " << b.name << " is intact: db " << human_bytes(r.digest.db_bytes) << ", sha256 "
              << r.digest.db_sha256 << (r.digest.has_trailer ? " (matches its trailer)" : " (no trailer)") << "\n";
    if (deep) {
      std::cout << "  structure checked: revision " << deep->status.revision << ", " << deep->live_keys
                << " live keys, totalKey " << deep->status.total_key << ", hash " << deep->status.hash << "\n";
    } else {
      std::cout << "  structure not checked (--shallow)\n";
    }
    print_change_log_check(log);
  });
}

void print_drill(const DrillReport& r) {
  std::cout << "Drill of backup " << r.backup_name << (r.passed ? ": PASSED" : ": FAILED") << "\n";
  if (!r.etcd.path.empty()) std::cout << "  etcd " << r.etcd.version << " (" << r.etcd.path << ", from " << r.etcd.source << ")\n";
  for (const auto& p : r.phases) std::printf("  %-13s %8.2fs\n", p.name.c_str(), p.seconds);
  if (r.rto_seconds > 0) std::printf("  %-13s %8.2fs  (fetch+verify, restore and start: the measured RTO)\n", "recovery", r.rto_seconds);
  for (const auto& c : r.checks) {
    std::cout << "  " << (c.passed ? "ok   " : "FAIL ") << c.name << ": expected " << c.expected << ", served " << c.served
              << (c.note.empty() ? "" : " (" + c.note + ")") << "\n";
  }
  for (const auto& n : r.notes) std::cout << "  note: " << n << "\n";
  std::cout.flush();
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
      "drill", "prove a backup restores: restore it into a scratch dir, start a private etcd on it, check what it serves");
  c->add_option("backup", f->query, "backup name, unique prefix, or 'latest'")->capture_default_str();
  f->store.add_to(c);
  f->store.add_key_flags(c, /*identities=*/true);
  c->add_option("--scratch-dir", f->drill.scratch_parent,
                "where the private data dir goes (needs room for the db plus 192 MiB; default $TMPDIR, else /tmp)");
  c->add_option("--etcd-binary", f->drill.etcd_binary,
                "the etcd to start (default: the etcd on PATH when it is of the backup's minor, else the release cache)");
  c->add_option("--cache-dir", f->drill.cache_dir, "the release cache to take etcd from (etcdadm download --cache-dir)")
      ->capture_default_str();
  c->add_option("--start-timeout", f->start_timeout, "how long etcd may take to serve the restored data")->capture_default_str();
  c->add_option("--to-revision", f->to_revision,
                "drill the backup with its change log replayed up to this revision; 'end': the newest revision the "
                "store can bring back");
  c->add_option("--to-time", f->to_time, "drill the state at this time (RFC 3339, or relative: -10m) through the change log");
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    f->drill.point_in_time = point_in_time_from_flags(f->to_revision, f->to_time, std::chrono::system_clock::now());
    auto timeout = parse_duration(f->start_timeout);
    if (!timeout || timeout->count() <= 0) {
      throw Error(ErrorKind::kInvalidArgument, "--start-timeout " + f->start_timeout + " is not a duration", "e.g. 90s, 5m");
    }
    f->drill.start_timeout = std::chrono::duration_cast<std::chrono::seconds>(*timeout);
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    BackupRecord b = find_backup_for(*store, catalog, f->query, f->drill.point_in_time);
    DrillReport r = run_drill(store, b, f->drill);
    record_drill_result(*store, &catalog, b, r);
    if (fmt == OutputFormat::kJson) std::cout << drill_report_json(r).dump(2) << "\n";
    else print_drill(r);
    if (!r.passed) throw Error(r.failure_kind, "drill of backup " + b.name + " failed: " + r.failure, r.failure_hint);
  });
}

// The backups `backup copy` takes from the source, oldest first (a copy killed midway leaves the
// older ones whole): a name or prefix, 'latest', --all, or --since a time.
std::vector<BackupRecord> backups_to_copy(BlobStore& from, Catalog& catalog, const std::string& query, bool all,
                                          const std::string& since) {
  const int given = (query.empty() ? 0 : 1) + (all ? 1 : 0) + (since.empty() ? 0 : 1);
  if (given != 1) {
    throw Error(ErrorKind::kInvalidArgument, "backup copy needs exactly one of: a backup name (or 'latest'), --all, --since TIME");
  }
  std::vector<BackupRecord> out;
  if (!query.empty()) {
    out.push_back(find_backup(from, catalog, query));
    return out;
  }
  catalog.sync(from, SyncDepth::kFull);
  const int64_t from_micros = since.empty() ? 0 : to_unix_micros(parse_point_in_time(since, std::chrono::system_clock::now()));
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
  c->add_flag("--no-change-log", f->no_change_log, "copy the backups only, not the change-log segments that extend them");
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
    if (to->url() == from->url()) throw Error(ErrorKind::kInvalidArgument, "--from and --to are the same store: " + to->url());
    Catalog catalog = f->store.open_catalog();
    auto selected = backups_to_copy(*from, catalog, f->query, f->all, f->since);
    prepare_copy_target(*from, *to);
    CopyResult r = copy_backups(from, &catalog, *to, selected, !f->no_change_log);
    const auto& damaged = r.damaged;
    sync_after(&catalog, *to, "backup copy");
    if (fmt == OutputFormat::kJson) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& b : r.backups) list.push_back({{"backup", b.name}, {"copied", b.copied}, {"bytes", b.bytes}});
      std::cout << nlohmann::json{{"from", from->url()}, {"to", to->url()}, {"backups", list}, {"damaged", damaged},
                                  {"segmentsCopied", r.segments_copied}, {"segmentsPresent", r.segments_present},
                                  {"bytes", r.bytes}, {"seconds", r.seconds}}
                       .dump(2)
                << "\n";
    } else {
      for (const auto& b : r.backups) {
        std::cout << (b.copied ? "copied  " : "present ") << b.name << (b.copied ? "  " + human_bytes(b.bytes) : "") << "\n";
      }
      std::cout << r.backups.size() << " backups in " << to->url() << " (" << human_bytes(r.bytes) << " copied";
      if (r.segments_copied + r.segments_present > 0) {
        std::cout << "; change log: " << r.segments_copied << " segments copied, " << r.segments_present << " present";
      }
      std::cout << ")\n";
    }
    if (!damaged.empty()) {
      throw Error(ErrorKind::kCorrupt, std::to_string(damaged.size()) + " backup(s) not copied: " + damaged.front(),
                  "they are damaged in the source and marked so; the others were copied");
    }
  });
}

void add_restore(CLI::App& backup) {
  struct Flags {
    StoreFlags store;
    std::string query, output_file, to_revision, to_time;
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
  c->add_option("--output-file,--output", f->output_file, "only fetch the verified snapshot into this file (not the format: -o)")
      ->check([](const std::string& v) -> std::string {
        for (const char* format : {"json", "table", "simple", "yaml", "fields", "protobuf", "raw"}) {
          if (v == format) return "'" + v + "' is an output format: use -o " + v + " (--output-file takes a file)";
        }
        return "";
      });
  c->add_option("--name", f->restore.name, "member name")->capture_default_str();
  c->add_option("--initial-cluster", f->restore.initial_cluster, "name=peerURL,... (default: <name>=<advertise peer URL>)");
  c->add_option("--initial-advertise-peer-urls", f->restore.initial_advertise_peer_urls, "this member's peer URLs")
      ->capture_default_str();
  c->add_option("--initial-cluster-token", f->restore.initial_cluster_token, "token of the new cluster")->capture_default_str();
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
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    if (f->restore.data_dir.empty() == f->output_file.empty()) {
      throw Error(ErrorKind::kInvalidArgument, "give exactly one of --data-dir and --output-file");
    }
    if (!f->output_file.empty() && f->restore.method.any_given()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "--restore-with, --bump-revision, --mark-compacted and --keep-revision go with --data-dir (--output-file writes the "
                  "snapshot as it was saved)");
    }
    f->restore.point_in_time = point_in_time_from_flags(f->to_revision, f->to_time, std::chrono::system_clock::now());
    const PointInTime& pit = f->restore.point_in_time;
    if (pit.given() && !f->output_file.empty()) {
      throw Error(ErrorKind::kInvalidArgument, "--to-revision and --to-time go with --data-dir (the replay writes a data dir)");
    }
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    BackupRecord b = find_backup_for(*store, catalog, f->query, pit);
    nlohmann::json j = {{"backup", b.name}, {"store", store->url()}};
    if (!f->output_file.empty()) {
      FetchResult r;
      with_damage_recorded(*store, catalog, b, [&] { r = fetch_verified(store, b, f->output_file, f->restore.force); },
                           same_command_for(f->query));
      j.update({{"output", f->output_file}, {"dbSize", r.digest.db_bytes}, {"dbSha256", r.digest.db_sha256}});
      if (fmt == OutputFormat::kTable) {
        std::cout << "Fetched backup " << b.name << " to " << f->output_file << " (" << human_bytes(r.digest.total_bytes)
                  << ", verified)\n";
      }
    } else {
      RestoreResult r;
      with_damage_recorded(*store, catalog, b, [&] { r = restore_to_data_dir(store, b, f->restore); },
                           same_command_for(f->query));
      j.update({{"dataDir", r.data_dir}, {"dbSize", r.db_size}, {"fetchSeconds", r.fetch_seconds},
                {"restoreSeconds", r.restore_seconds}, {"revisionBump", revision_bump_json(r.revision_bump)}});
      if (r.native) {
        j.update({{"restoreWith", "native"}, {"etcdVersion", r.flavor}, {"memberId", id_hex(r.member_id)},
                  {"clusterId", id_hex(r.cluster_id)}, {"snapshotRevision", r.snapshot_revision},
                  {"revision", r.revision}});
        if (r.replay) {
          j["replay"] = {{"fromRevision", r.replay->snapshot_revision},
                         {"toRevision", r.replay->revision},
                         {"revisions", r.replay->records},
                         {"events", r.replay->events},
                         {"segments", r.replay->segments},
                         {"seconds", r.replay->seconds},
                         {"late", r.replay->late ? late_window_json(r.replay->late->first_revision,
                                                                    r.replay->late->last_revision,
                                                                    r.replay->late->committed_after_micros,
                                                                    r.replay->late->received_micros)
                                                 : nullptr}};
        }
      } else {
        j.update({{"restoreWith", r.tool.is_etcdutl ? "etcdutl" : "etcdctl"}, {"tool", r.tool.path},
                  {"toolVersion", r.tool.version}});
      }
      if (fmt == OutputFormat::kTable) {
        std::string how = r.native ? "written natively for etcd " + r.flavor + ", member " + id_hex(r.member_id) +
                                         ", cluster " + id_hex(r.cluster_id) + ", revision " + std::to_string(r.revision)
                                   : r.tool.path + " " + r.tool.version;
        std::cout << "Restored backup " << b.name << " into " << r.data_dir << " (" << human_bytes(r.db_size) << " db, "
                  << how << ")\n";
        if (r.replay) {
          std::cout << "Change log replayed from revision " << r.replay->snapshot_revision << " to " << r.replay->revision
                    << " (" << r.replay->records << " revisions, " << r.replay->events << " events, " << r.replay->segments
                    << " segments, " << fmt::format("{:.2f}", r.replay->seconds) << "s)\n";
          if (const auto& late = r.replay->late) {
            std::cout << "The target is inside a window where commit times are known only approximately: revisions "
                      << late->first_revision << ".." << late->last_revision << " were committed after "
                      << format_rfc3339_micros(from_unix_micros(late->committed_after_micros)) << " and received by "
                      << format_rfc3339_micros(from_unix_micros(late->received_micros))
                      << " (the sidecar's capture was away), perhaps before the target.\nRestored revision "
                      << r.replay->revision << ", the newest known to be committed by then; --to-revision "
                      << late->last_revision << " includes them.\n";
          }
        }
        std::cout << r.revision_bump.explanation() << ".\n";
        if (r.revision_bump.by > 0) {
          std::cout << "Once etcd is up, start every kube-apiserver and restart the components that keep watches, so "
                       "that they re-list at once.\n";
        }
        std::cout
                  << "Start etcd with --data-dir " << r.data_dir << " --name " << f->restore.name
                  << " and the same --initial-cluster / --initial-advertise-peer-urls; every other member must be\n"
                  << "restored from the same backup (or join this one as a new member).\n";
      }
    }
    if (fmt == OutputFormat::kJson) std::cout << j.dump(2) << "\n";
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
  c->add_option("--policy", f->policy, "etcd-manager | count:N | gfs:HOURLY,DAILY,WEEKLY,MONTHLY")->capture_default_str();
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
    if (fmt == OutputFormat::kJson) {
      nlohmann::json j = {{"policy", policy.describe()},
                          {"dryRun", r.dry_run},
                          {"keep", r.plan.keep},
                          {"delete", r.plan.remove},
                          {"deleted", r.deleted},
                          {"changeLogSegments", r.segments_removed.size()},
                          {"changeLogLateMarkers", r.late_markers_removed.size()},
                          {"unparseable", r.plan.unparseable},
                          {"future", r.plan.future},
                          {"versionedBucket", r.versions.versioned},
                          {"noncurrentVersionsRemoved", r.versions.removed},
                          {"noncurrentVersionsKept", r.versions.refused}};
      nlohmann::json locked = nlohmann::json::array();
      for (const auto& [name, why] : r.locked) locked.push_back({{"backup", name}, {"kept", why}});
      j["locked"] = locked;
      nlohmann::json not_whole = nlohmann::json::array();
      for (const auto& [name, why] : r.plan.not_whole) not_whole.push_back({{"backup", name}, {"why", why}});
      j["notWhole"] = not_whole;
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << "Policy " << policy.describe() << ": keep " << r.plan.keep.size() << ", "
              << (r.dry_run ? "would delete " : "deleted ") << r.plan.remove.size() << "\n";
    for (const auto& n : r.plan.remove) std::cout << (r.dry_run ? "  would delete " : "  deleted ") << n << "\n";
    for (const auto& n : r.plan.unparseable) std::cout << "  left alone (name is not a backup time): " << n << "\n";
    for (const auto& n : r.plan.future) {
      std::cout << "  left alone, not counted (dated after this host's clock): " << n << "\n";
    }
    for (const auto& [name, why] : r.plan.not_whole) {
      std::cout << "  left alone, not counted (" << why << "): " << name << "\n";
    }
    for (const auto& [name, why] : r.locked) std::cout << "  locked by the store, " << why << ": " << name << "\n";
    if (!r.segments_removed.empty()) {
      std::cout << (r.dry_run ? "  would delete " : "  deleted ") << r.segments_removed.size()
                << " change log segments no kept backup needs\n";
    }
    if (r.versions.removed > 0) {
      std::cout << "  versioned bucket: removed " << r.versions.removed << " noncurrent versions and delete markers\n";
    }
    for (const auto& kept : r.versions.refused) std::cout << "  versioned bucket keeps (lock or retention): " << kept << "\n";
    if (f->prune.keep_noncurrent_versions && !r.dry_run) {
      std::cout << "  noncurrent versions kept (--keep-noncurrent-versions): the bucket's lifecycle rule must expire them\n";
    }
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
      throw Error(ErrorKind::kInvalidArgument, "nothing to do",
                  "give new recipients (--encrypt-to, --encrypt-to-file, --new-passphrase-file), backups to rekey, or --all");
    }
    o.current_passphrase = f->store.passphrase();
    o.all = f->all;
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    for (const auto& q : f->queries) o.names.push_back(find_backup(*store, catalog, q).name);
    RekeyResult r = rekey_backups(store, &catalog, o);
    if (fmt == OutputFormat::kJson) {
      std::cout << nlohmann::json{{"recipients", r.recipients},
                                  {"storeChanged", r.store_changed},
                                  {"rekeyed", r.rekeyed},
                                  {"alreadyEncryptedToThem", r.already},
                                  {"changeLogSegmentsRekeyed", r.segments_rekeyed},
                                  {"changeLogSegmentsAlready", r.segments_already},
                                  {"oldVersionsRemoved", r.old_versions_removed},
                                  {"oldVersionsKept", r.old_versions_kept}}
                       .dump(2)
                << "\n";
      return;
    }
    std::string to = join_list(r.recipients);
    if (r.store_changed) std::cout << "Backups saved from now on are encrypted to " << to << "\n";
    std::cout << "Rekeyed " << r.rekeyed.size() << " backup(s) to " << to;
    if (!r.already.empty()) std::cout << " (" << r.already.size() << " already were)";
    if (r.segments_rekeyed + r.segments_already > 0) {
      std::cout << ", and " << r.segments_rekeyed << " change log segment(s)";
      if (r.segments_already > 0) std::cout << " (" << r.segments_already << " already were)";
    }
    std::cout << "\n";
    if (r.old_versions_removed > 0) {
      std::cout << "Removed " << r.old_versions_removed << " noncurrent version(s) of the replaced files from the versioned bucket\n";
    }
    for (const auto& kept : r.old_versions_kept) {
      std::cout << "The bucket keeps a version encrypted to the old recipients (lock or retention): " << kept << "\n";
    }
    if (!r.store_changed && !f->all) return;
    if (f->all) {
      std::cout << "An old identity no longer opens these backups in the store; copies made before (downloads, "
                   "backups of the bucket) still open with it: docs/encryption.md\n";
    } else {
      std::cout << "Existing backups still open with the old keys until rekeyed: etcdadm backup rekey --all\n";
    }
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
    if (fmt == OutputFormat::kJson) {
      nlohmann::json j = {{"store", store->url()}, {"keyId", change.after.key_id}, {"recipients", change.after.labels}};
      if (change.before) j["before"] = {{"keyId", change.before->key_id}, {"recipients", change.before->labels}};
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << "This host writes into " << store->url() << " for " << change.after.describe();
    if (change.before && !(*change.before == change.after)) std::cout << " (was " << change.before->describe() << ")";
    std::cout << "\n";
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
    if (!f->sidecar.listen.empty()) http = std::make_unique<SidecarHttp>(sidecar, f->sidecar.listen, prepared->trigger_token);
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

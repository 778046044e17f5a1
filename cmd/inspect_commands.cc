#include "cmd/inspect_commands.h"

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cmd/connection_flags.h"
#include "cmd/invocation.h"
#include "cmd/output.h"
#include "cmd/store_flags.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/key_text.h"
#include "etcd/datadir/bolt_reader.h"
#include "etcd/datadir/snapshot_inspect.h"
#include "inspect/restore_keys.h"
#include "inspect/snapshot_diff.h"
#include "render/restore_keys_result.h"
#include "render/snapshot_diff.h"
#include "render/snapshot_inspection.h"
#include "render/snapshot_keys.h"
#include "restore/damage.h"
#include "restore/fetch.h"
#include "restore/resolve.h"
#include "restore/snapshot_source.h"
#include "store/snapshot_digest.h"

namespace etcdadm::cli {

namespace {

// Where the snapshot comes from: a backup in a store, or a local file (--file).
struct SourceFlags {
  StoreFlags store;
  std::string file;
  void add_to(CLI::App* c) {
    store.add_to(c);
    store.add_key_flags(c, /*identities=*/true);
    c->add_option("--file", file,
                  "read this local snapshot file (e.g. from `etcdctl snapshot save`) instead of a backup");
  }
};

// --prefix means one thing on get, diff and restore-keys, as in etcdctl: the KEY argument is a
// prefix, not one key.
void add_prefix_flag(CLI::App* c, bool& prefix) {
  c->add_flag("--prefix", prefix, "KEY is a prefix: every key starting with it (etcdctl's --prefix)");
}

PrefixRange key_range(const std::string& key, bool prefix) { return prefix ? prefix_range(key) : PrefixRange{key, ""}; }

// "BACKUP KEY", or "KEY" alone with --file.
// A usage line per way of calling a command, each after the command's name.
class UsageLines : public CLI::Formatter {
 public:
  explicit UsageLines(std::vector<std::string> lines) : lines_(std::move(lines)) {}
  std::string make_usage(const CLI::App*, std::string name) const override {
    std::string out;
    for (size_t i = 0; i < lines_.size(); ++i) {
      out += (i == 0 ? get_label("Usage") + ": " : std::string(get_label("Usage").size() + 2, ' ')) + name + " " +
             lines_[i] + "\n";
    }
    return out;
  }

 private:
  std::vector<std::string> lines_;
};

// The BACKUP and KEY positionals of get and restore-keys; with --file, the one given is the key.
struct BackupAndKey {
  std::string first, second;

  void add_to(CLI::App* c) {
    c->add_option("BACKUP", first, "name, unique prefix or 'latest' (with --file: the KEY)")->required();
    c->add_option("KEY", second,
                  "the key, or with --prefix the prefix, as tables print keys: \\xNN for a byte, \\\\ for a backslash");
    // CLI11 would print one positional taking one or two values as "args(1x)".
    c->formatter(
        std::make_shared<UsageLines>(std::vector<std::string>{"[OPTIONS] BACKUP KEY", "--file FILE [OPTIONS] KEY"}));
  }

  std::pair<std::string, std::string> resolve(const SourceFlags& source) const {
    if (!source.file.empty()) {
      if (!second.empty()) throw Error(ErrorKind::kInvalidArgument, "with --file give only the key");
      return {"", parse_printed_bytes(first)};
    }
    if (second.empty())
      throw Error(ErrorKind::kInvalidArgument, "give the backup and the key (or --prefix and a prefix)");
    return {first, parse_printed_bytes(second)};
  }
};

// A snapshot opened from the command line (a backup in --store, or --file) and how it is named in
// the output.
class OpenedSnapshot {
 public:
  OpenedSnapshot(const SourceFlags& f, const std::string& query, TrailerCheck check = TrailerCheck::kFirst) {
    if (!f.file.empty()) {
      if (!query.empty()) throw Error(ErrorKind::kInvalidArgument, "give either a backup or --file, not both");
      snapshot_ = SnapshotSource::open_file(f.file, check);
      source_ = render::file_source_json(
          f.file, check != TrailerCheck::kFirst ? std::optional(snapshot_->trailer_checked()) : std::nullopt);
      return;
    }
    if (query.empty()) {
      throw Error(ErrorKind::kInvalidArgument, "name a backup (name, unique prefix or 'latest') or give --file");
    }
    if (f.store.store.empty()) throw Error(ErrorKind::kInvalidArgument, "give --store (or ETCDADM_STORE) or --file");
    auto store = f.store.open();
    Catalog catalog = f.store.open_catalog();
    BackupRecord b = find_backup(*store, catalog, query);
    with_damage_recorded(
        *store, catalog, b, [&] { snapshot_ = SnapshotSource::open_backup(store, b); }, same_command_for(query));
    source_ = render::backup_source_json(b.name, store->url());
  }

  const BoltReader& db() const { return snapshot_->db(); }
  const nlohmann::json& source() const { return source_; }
  void finish_trailer_check() { snapshot_->finish_trailer_check(); }

 private:
  std::unique_ptr<SnapshotSource> snapshot_;
  nlohmann::json source_;
};

void add_inspect(CLI::App& backup) {
  struct Flags {
    SourceFlags source;
    std::string query, semantics = "3.4";
    int depth = 2;
    bool check_trailer = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand(
      "inspect",
      "what a backup holds without restoring it: `etcdctl snapshot status` fields, members, keys per prefix, ...");
  c->add_option("backup", f->query, "backup name, unique prefix, or 'latest' (omit with --file)");
  f->source.add_to(c);
  c->add_option("--semantics", f->semantics,
                "totalKey as etcdctl 3.4/3.5 (every bbolt entry) or etcdutl 3.6/3.7 (live keys)")
      ->capture_default_str()
      ->check(CLI::IsMember({"3.4", "3.5", "3.6", "3.7"}));
  c->add_option("--prefix-depth", f->depth, "'/'-separated levels that make a prefix (/registry/pods is 2)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  c->add_flag("--check-trailer", f->check_trailer,
              "with --file: also check the snapshot's SHA-256 trailer (one more pass over the file, on a "
              "second thread); JSON field trailerChecked says whether it was");
  c->callback([f] {
    auto fmt = parse_output_format(f->source.store.output);
    auto semantics = f->semantics >= "3.6" ? StatusSemantics::kEtcd36 : StatusSemantics::kEtcd34;
    OpenedSnapshot snap(f->source, f->query, f->check_trailer ? TrailerCheck::kConcurrent : TrailerCheck::kSkip);
    SnapshotInspection r;
    try {
      r = inspect_snapshot(snap.db(), f->depth);
    } catch (...) {
      snap.finish_trailer_check();  // a damaged file: the SHA-256 mismatch is the clearer message
      throw;
    }
    snap.finish_trailer_check();
    int64_t total_key = semantics == StatusSemantics::kEtcd36 ? static_cast<int64_t>(r.live_keys) : r.status.total_key;
    if (fmt == OutputFormat::kJson) {
      std::cout << render::snapshot_inspection_json(r, semantics, total_key, snap.source()).dump(2) << "\n";
    } else {
      std::cout << render::snapshot_inspection_text(r, total_key, snap.source());
    }
  });
}

void add_get(CLI::App& backup) {
  struct Flags {
    SourceFlags source;
    BackupAndKey args;
    bool prefix = false, keys_only = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand("get", "read keys as they were when a backup was taken");
  f->args.add_to(c);
  f->source.add_to(c);
  // `get` writes one more format than the other commands: its help says so.
  c->get_option("--output-format")
      ->description(
          "table|json|raw (env ETCDCTL_WRITE_OUT, as etcdctl's -w); raw: the value's bytes as they are "
          "(one exact key), or each key and value on lines of their own (--prefix)");
  add_prefix_flag(c, f->prefix);
  c->add_flag("--keys-only", f->keys_only, "print keys (and revisions) without values");
  c->callback([f] {
    const std::string& out = f->source.store.output;
    if (out != "json" && out != "raw" && out != "table" && out != "simple") {
      throw Error(ErrorKind::kInvalidArgument, "unknown output format '" + out + "'", "use -o table, json or raw");
    }
    auto [query, key] = f->args.resolve(f->source);
    OpenedSnapshot snap(f->source, query);
    PrefixRange range = key_range(key, f->prefix);
    SnapshotStatus status = snapshot_status(snap.db());
    std::vector<SnapshotKeyValue> kvs;
    visit_latest(snap.db(), range.key, range.range_end, [&](const SnapshotKeyValue& kv) {
      kvs.push_back(kv);
      if (f->keys_only) kvs.back().value.clear();
    });
    if (kvs.empty() && !f->prefix) {
      throw Error(ErrorKind::kNotFound, "key '" + printable_bytes(key, 200) +
                                            "' does not exist in the snapshot (revision " +
                                            std::to_string(status.revision) + ")");
    }
    if (out == "json") {
      std::cout << render::snapshot_keys_json(snap.source(), status.revision, kvs, f->keys_only).dump(2) << "\n";
    } else if (out == "raw")
      std::cout << render::snapshot_keys_raw(kvs, f->keys_only, f->prefix);
    else
      std::cout << render::snapshot_keys_text(kvs, status.revision, f->keys_only);
  });
}

void add_diff(CLI::App& backup) {
  struct Flags {
    SourceFlags source;
    std::string a, b, key;
    bool prefix = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand("diff", "keys added, removed and changed between two backups");
  c->add_option("A", f->a, "the older backup (name, unique prefix or 'latest')")->required();
  c->add_option("B", f->b, "the newer backup")->required();
  c->add_option("key", f->key, "only this key (every key when omitted), as tables print keys (\\xNN for a byte)");
  f->source.store.add_to(c);
  f->source.store.add_key_flags(c, /*identities=*/true);
  add_prefix_flag(c, f->prefix);
  c->callback([f] {
    auto fmt = parse_output_format(f->source.store.output);
    OpenedSnapshot a(f->source, f->a);
    OpenedSnapshot b(f->source, f->b);
    const std::string key = parse_printed_bytes(f->key);
    PrefixRange range = key_range(key, f->prefix || key.empty());
    SnapshotDiff d = diff_snapshots(a.db(), b.db(), range.key, range.range_end);
    if (fmt == OutputFormat::kJson) {
      const bool prefix = f->prefix || f->key.empty();
      std::cout << render::snapshot_diff_json(d, a.source(), b.source(), f->key, prefix).dump(2) << "\n";
    } else {
      std::cout << render::snapshot_diff_text(d);
    }
  });
}

void add_restore_keys(CLI::App& backup) {
  struct Flags {
    SourceFlags source;
    ConnectionFlags conn;
    BackupAndKey args;
    std::string conflict = "skip-existing";
    bool prefix = false;
    RestoreKeysOptions options;
  };
  auto f = std::make_shared<Flags>();
  auto* c = backup.add_subcommand("restore-keys", "put keys from a backup back into a live cluster");
  f->args.add_to(c);
  f->source.add_to(c);
  f->conn.add_to(c);
  add_prefix_flag(c, f->prefix);
  c->add_option("--conflict", f->conflict, "skip-existing | overwrite | only-if-absent")->capture_default_str();
  c->add_flag("--dry-run", f->options.dry_run, "show what would change, change nothing");
  c->add_option("--max-txn-ops", f->options.max_txn_ops, "operations per transaction (etcd's --max-txn-ops)")
      ->capture_default_str();
  c->callback([f] {
    auto fmt = parse_output_format(f->source.store.output);
    RestoreKeysOptions o = f->options;
    o.policy = parse_conflict_policy(f->conflict);
    auto [query, key] = f->args.resolve(f->source);
    OpenedSnapshot snap(f->source, query);
    std::vector<SnapshotKeyValue> kvs;
    PrefixRange range = key_range(key, f->prefix);
    visit_latest(snap.db(), range.key, range.range_end, [&](const SnapshotKeyValue& kv) { kvs.push_back(kv); });
    if (kvs.empty()) {
      throw Error(ErrorKind::kNotFound, "the backup holds no key " + (f->prefix ? "with prefix " + key : key));
    }
    EtcdClient client(f->conn.resolve());
    RestoreKeysResult r = restore_keys(client, kvs, o);
    if (fmt == OutputFormat::kJson)
      std::cout << render::restore_keys_result_json(r, snap.source(), o).dump(2) << "\n";
    else
      std::cout << render::restore_keys_result_text(r, o);
  });
}

}  // namespace

void add_inspect_commands(CLI::App& backup) {
  add_inspect(backup);
  add_get(backup);
  add_diff(backup);
  add_restore_keys(backup);
}

}  // namespace etcdadm::cli

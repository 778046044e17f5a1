#include "cmd/inspect_commands.h"

#include "cmd/invocation.h"
#include "restore/damage.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cmd/connection_flags.h"
#include "cmd/output.h"
#include "cmd/store_flags.h"
#include "common/base64.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/key_text.h"
#include "common/text.h"
#include "etcd/datadir/bolt_reader.h"
#include "restore/fetch.h"
#include "restore/resolve.h"
#include "inspect/restore_keys.h"
#include "inspect/snapshot_diff.h"
#include "etcd/datadir/snapshot_inspect.h"
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
    c->add_option("KEY", second, "the key, or with --prefix the prefix, as tables print keys: \\xNN for a byte, \\\\ for a backslash");
    // CLI11 would print one positional taking one or two values as "args(1x)".
    c->formatter(std::make_shared<UsageLines>(std::vector<std::string>{"[OPTIONS] BACKUP KEY", "--file FILE [OPTIONS] KEY"}));
  }

  std::pair<std::string, std::string> resolve(const SourceFlags& source) const {
    if (!source.file.empty()) {
      if (!second.empty()) throw Error(ErrorKind::kInvalidArgument, "with --file give only the key");
      return {"", parse_printed_bytes(first)};
    }
    if (second.empty()) throw Error(ErrorKind::kInvalidArgument, "give the backup and the key (or --prefix and a prefix)");
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
      source_ = {{"file", f.file}};
      if (check != TrailerCheck::kFirst) source_["trailerChecked"] = snapshot_->trailer_checked();
      return;
    }
    if (query.empty()) {
      throw Error(ErrorKind::kInvalidArgument, "name a backup (name, unique prefix or 'latest') or give --file");
    }
    if (f.store.store.empty()) throw Error(ErrorKind::kInvalidArgument, "give --store (or ETCDADM_STORE) or --file");
    auto store = f.store.open();
    Catalog catalog = f.store.open_catalog();
    BackupRecord b = find_backup(*store, catalog, query);
    with_damage_recorded(*store, catalog, b, [&] { snapshot_ = SnapshotSource::open_backup(store, b); },
                         same_command_for(query));
    source_ = {{"backup", b.name}, {"store", store->url()}};
  }

  const BoltReader& db() const { return snapshot_->db(); }
  const nlohmann::json& source() const { return source_; }
  void finish_trailer_check() { snapshot_->finish_trailer_check(); }

 private:
  std::unique_ptr<SnapshotSource> snapshot_;
  nlohmann::json source_;
};

bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

// Binary-safe JSON: `name` as text when it is UTF-8, else `nameBase64`.
void put_bytes(nlohmann::json& j, const std::string& name, const std::string& bytes) {
  if (valid_utf8(bytes))
    j[name] = bytes;
  else
    j[name + "Base64"] = base64(bytes);
}

nlohmann::json inspection_json(const SnapshotInspection& r, StatusSemantics semantics, int64_t status_total_key) {
  nlohmann::json j = {{"hash", r.status.hash},
                      {"revision", r.status.revision},
                      {"totalKey", status_total_key},
                      {"totalSize", r.status.total_size}};
  if (!r.status.version.empty()) j["version"] = r.status.version;
  j["semantics"] = semantics == StatusSemantics::kEtcd36 ? "3.6" : "3.4";
  j["members"] = nlohmann::json::array();
  for (const auto& m : r.members) {
    j["members"].push_back({{"memberId", id_hex(m.id)},
                            {"name", m.name},
                            {"peerUrls", m.peer_urls},
                            {"clientUrls", m.client_urls},
                            {"learner", m.learner}});
  }
  j["removedMembers"] = nlohmann::json::array();
  for (auto id : r.removed_member_ids) j["removedMembers"].push_back(id_hex(id));
  j["clusterVersion"] = r.cluster_version;
  j["consistentIndex"] = r.consistent_index;
  j["term"] = r.term;
  j["scheduledCompactRevision"] =
      r.scheduled_compact_revision ? nlohmann::json(*r.scheduled_compact_revision) : nullptr;
  j["finishedCompactRevision"] = r.finished_compact_revision ? nlohmann::json(*r.finished_compact_revision) : nullptr;
  j["liveKeys"] = r.live_keys;
  j["revisions"] = r.revisions;
  j["prefixes"] = nlohmann::json::array();
  for (const auto& p : r.prefixes) {
    nlohmann::json e = {{"keys", p.keys}, {"bytes", p.bytes}};
    put_bytes(e, "prefix", p.prefix);
    j["prefixes"].push_back(std::move(e));
  }
  j["leases"] = nlohmann::json::array();
  for (const auto& l : r.leases) {
    j["leases"].push_back({{"id", l.id},
                           {"idHex", fmt::format("{:016x}", static_cast<uint64_t>(l.id))},  // as etcdctl prints leases
                           {"ttl", l.ttl},
                           {"remainingTTL", l.remaining_ttl}});
  }
  j["authEnabled"] = r.auth_enabled;
  j["authRevision"] = r.auth_revision;
  j["users"] = r.users;
  j["roles"] = r.roles;
  j["alarms"] = r.alarms;
  return j;
}

void print_inspection_table(const SnapshotInspection& r, int64_t status_total_key, const nlohmann::json& source) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("none"); };
  std::ostringstream o;
  if (source.contains("backup"))
    o << "Backup            " << source["backup"].get<std::string>() << "\n";
  else
    o << "File              " << source["file"].get<std::string>() << "\n";
  if (source.contains("trailerChecked")) {
    o << "SHA-256 trailer   "
      << (source["trailerChecked"].get<bool>() ? "checked" : "not checked (--check-trailer checks it)") << "\n";
  }
  o << "Hash              " << r.status.hash << " (0x" << std::hex << std::setw(8) << std::setfill('0') << r.status.hash
    << std::dec << std::setfill(' ') << ")\n"
    << "Revision          " << r.status.revision << "\n"
    << "Total keys        " << status_total_key << " (bbolt entries)\n"
    << "Total size        " << r.status.total_size << " (" << human_bytes(static_cast<uint64_t>(r.status.total_size))
    << ")\n";
  if (!r.status.version.empty()) o << "Storage version   " << r.status.version << "\n";
  o << "Cluster version   " << (r.cluster_version.empty() ? "unknown" : r.cluster_version) << "\n"
    << "Consistent index  " << r.consistent_index << (r.term ? ", term " + std::to_string(r.term) : "") << "\n"
    << "Compaction        scheduled " << opt(r.scheduled_compact_revision) << ", finished "
    << opt(r.finished_compact_revision) << "\n"
    << "Live keys         " << r.live_keys << " (" << r.revisions << " revisions kept)\n"
    << "Leases            " << r.leases.size() << "\n"
    << "Auth              " << (r.auth_enabled ? "enabled" : "disabled") << " (revision " << r.auth_revision << ", "
    << r.users << " users, " << r.roles << " roles)\n"
    << "Alarms            " << (r.alarms.empty() ? "none" : "") << "\n";
  for (const auto& a : r.alarms) o << "  " << a << "\n";
  o << "Members\n";
  for (const auto& m : r.members) {
    o << "  " << id_hex(m.id) << "  " << (m.name.empty() ? "(unstarted)" : m.name) << (m.learner ? " (learner)" : "");
    for (const auto& u : m.peer_urls) o << "  peer " << u;
    for (const auto& u : m.client_urls) o << "  client " << u;
    o << "\n";
  }
  for (auto id : r.removed_member_ids) o << "  " << id_hex(id) << "  (removed)\n";
  o << "Prefixes\n";
  o << "  " << std::left << std::setw(48) << "PREFIX" << std::right << std::setw(10) << "KEYS" << std::setw(14)
    << "BYTES"
    << "\n";
  for (const auto& p : r.prefixes) {
    o << "  " << std::left << std::setw(48) << (p.prefix.empty() ? "(no prefix)" : printable_bytes(p.prefix, 45))
      << std::right << std::setw(10) << p.keys << std::setw(14) << p.bytes << "\n";
  }
  std::cout << o.str();
}

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
  c->add_option("--semantics", f->semantics, "totalKey as etcdctl 3.4/3.5 (every bbolt entry) or etcdutl 3.6/3.7 (live keys)")
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
      nlohmann::json j = inspection_json(r, semantics, total_key);
      j.update(snap.source());
      std::cout << j.dump(2) << "\n";
    } else {
      print_inspection_table(r, total_key, snap.source());
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
      ->description("table|json|raw (env ETCDCTL_WRITE_OUT, as etcdctl's -w); raw: the value's bytes as they are "
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
      throw Error(ErrorKind::kNotFound, "key '" + printable_bytes(key, 200) + "' does not exist in the snapshot (revision " +
                                            std::to_string(status.revision) + ")");
    }
    if (out == "json") {
      nlohmann::json j = snap.source();
      j["revision"] = status.revision;
      j["count"] = kvs.size();
      j["kvs"] = nlohmann::json::array();
      for (const auto& kv : kvs) {
        nlohmann::json e = {{"createRevision", kv.create_revision},
                            {"modRevision", kv.mod_revision},
                            {"version", kv.version},
                            {"lease", kv.lease}};
        put_bytes(e, "key", kv.key);
        if (!f->keys_only) put_bytes(e, "value", kv.value);
        j["kvs"].push_back(std::move(e));
      }
      std::cout << j.dump(2) << "\n";
    } else if (out == "raw") {
      // etcdctl's simple format: key line, then the value as is (values only with one exact key).
      for (const auto& kv : kvs) {
        if (f->keys_only)
          std::cout << kv.key << "\n";
        else if (!f->prefix)
          std::cout << kv.value;
        else
          std::cout << kv.key << "\n" << kv.value << "\n";
      }
    } else {
      std::ostringstream o;
      o << std::left << std::setw(40) << "KEY" << std::right << std::setw(10) << "CREATE" << std::setw(10) << "MOD"
        << std::setw(9) << "VERSION" << std::setw(18) << "LEASE" << (f->keys_only ? "" : "  VALUE") << "\n";
      for (const auto& kv : kvs) {
        o << std::left << std::setw(40) << printable_bytes(kv.key, 60) << std::right << std::setw(10) << kv.create_revision
          << std::setw(10) << kv.mod_revision << std::setw(9) << kv.version << std::setw(18)
          << (kv.lease ? id_hex(static_cast<uint64_t>(kv.lease)) : "-");
        if (!f->keys_only) o << "  " << printable_bytes(kv.value, 60);
        o << "\n";
      }
      o << kvs.size() << " key(s) at revision " << status.revision << "\n";
      std::cout << o.str();
    }
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
      nlohmann::json entries = nlohmann::json::array();
      for (const auto& e : d.entries) {
        nlohmann::json j = {{"kind", key_diff_kind_name(e.kind)},
                            {"modRevisionA", e.mod_revision_a},
                            {"modRevisionB", e.mod_revision_b},
                            {"sizeA", e.size_a},
                            {"sizeB", e.size_b}};
        put_bytes(j, "key", e.key);
        entries.push_back(std::move(j));
      }
      nlohmann::json out = {{"a", a.source()},          {"b", b.source()},      {"key", f->key},
                            {"prefix", f->prefix || f->key.empty()},
                            {"added", d.added},         {"removed", d.removed}, {"changed", d.changed},
                            {"unchanged", d.unchanged}, {"entries", entries}};
      std::cout << out.dump(2) << "\n";
      return;
    }
    for (const auto& e : d.entries) {
      const char* mark = e.kind == KeyDiff::Kind::kAdded ? "+" : e.kind == KeyDiff::Kind::kRemoved ? "-" : "~";
      std::printf("%s %s\n", mark, printable_bytes(e.key, 200).c_str());
    }
    std::printf("%llu added, %llu removed, %llu changed, %llu unchanged\n", static_cast<unsigned long long>(d.added),
                static_cast<unsigned long long>(d.removed), static_cast<unsigned long long>(d.changed),
                static_cast<unsigned long long>(d.unchanged));
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
    if (fmt == OutputFormat::kJson) {
      nlohmann::json actions = nlohmann::json::array();
      for (const auto& a : r.actions) {
        nlohmann::json j = {{"action", key_action_name(a.kind)},
                            {"liveModRevision", a.live_mod_revision},
                            {"hadLease", a.had_lease},
                            {"applied", a.applied}};
        put_bytes(j, "key", a.key);
        actions.push_back(std::move(j));
      }
      nlohmann::json out = snap.source();
      out.update({{"dryRun", o.dry_run},
                  {"conflict", conflict_policy_name(o.policy)},
                  {"created", r.created},
                  {"updated", r.updated},
                  {"skipped", r.skipped},
                  {"unchanged", r.unchanged},
                  {"conflicts", r.conflicts},
                  {"leasesDropped", r.leases_dropped},
                  {"plannedAtRevision", r.planned_at_revision},
                  {"actions", actions}});
      std::cout << out.dump(2) << "\n";
      return;
    }
    for (const auto& a : r.actions) {
      std::printf(
          "%-9s %s%s\n", key_action_name(a.kind), printable_bytes(a.key, 200).c_str(),
          (!o.dry_run && (a.kind == KeyAction::Kind::kCreate || a.kind == KeyAction::Kind::kUpdate) && !a.applied)
              ? "  (changed meanwhile: left alone)"
              : "");
    }
    if (o.dry_run) {
      std::printf("dry run at revision %lld: nothing was written\n", static_cast<long long>(r.planned_at_revision));
    } else {
      std::printf("%llu created, %llu updated, %llu skipped, %llu unchanged, %llu conflicts\n",
                  static_cast<unsigned long long>(r.created), static_cast<unsigned long long>(r.updated),
                  static_cast<unsigned long long>(r.skipped), static_cast<unsigned long long>(r.unchanged),
                  static_cast<unsigned long long>(r.conflicts));
    }
    if (r.leases_dropped > 0) {
      std::printf("%llu key(s) had a lease in the backup; they were written without one\n",
                  static_cast<unsigned long long>(r.leases_dropped));
    }
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

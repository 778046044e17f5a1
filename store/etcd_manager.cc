#include "store/etcd_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"

namespace etcdadm {

using json = nlohmann::json;

namespace {

// major.minor of "3.5.30", "v3.6.11" or "3.5" (semver's ParseTolerant, as far as etcd-manager relies
// on it); nullopt when it is none of these.
std::optional<std::pair<int, int>> major_minor(std::string v) {
  if (!v.empty() && v.front() == 'v') v.erase(v.begin());
  int major = 0, minor = 0;
  const char* end = v.data() + v.size();
  auto [p1, e1] = std::from_chars(v.data(), end, major);
  if (e1 != std::errc() || p1 == end || *p1 != '.') return std::nullopt;
  auto [p2, e2] = std::from_chars(p1 + 1, end, minor);
  if (e2 != std::errc() || (p2 != end && *p2 != '.' && *p2 != '-' && *p2 != '+')) return std::nullopt;
  return std::make_pair(major, minor);
}

// A field by its JSON name or its proto name, as protojson reads either; null counts as absent.
const json* field(const json& j, const char* camel, const char* snake) {
  for (const char* name : {camel, snake}) {
    auto it = j.find(name);
    if (it != j.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

// An integer as protojson takes it: a JSON number without a fraction, or a decimal string.
int64_t integer_of(const json& v, const std::string& what, const std::string& where) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    int64_t n = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && p == s.data() + s.size() && !s.empty()) return n;
  }
  throw Error(ErrorKind::kCorrupt, where + ": \"" + what + "\" is not an integer");
}

std::string string_of(const json& v, const std::string& what, const std::string& where) {
  if (!v.is_string()) throw Error(ErrorKind::kCorrupt, where + ": \"" + what + "\" is not a string");
  return v.get<std::string>();
}

json parse_object(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kCorrupt, where + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(ErrorKind::kCorrupt, where + " is not a JSON object");
  return j;
}

EtcdManagerClusterSpec cluster_spec_from(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error(ErrorKind::kCorrupt, where + ": the cluster spec is not an object");
  EtcdManagerClusterSpec s;
  if (const json* v = field(j, "memberCount", "member_count")) {
    int64_t n = integer_of(*v, "memberCount", where);
    if (n < INT32_MIN || n > INT32_MAX) throw Error(ErrorKind::kCorrupt, where + ": \"memberCount\" is out of range");
    s.member_count = static_cast<int>(n);
  }
  if (const json* v = field(j, "etcdVersion", "etcd_version")) s.etcd_version = string_of(*v, "etcdVersion", where);
  return s;
}

// An object of rendered `"name": value` fields at `indent`, as jsonpb writes one: a field per
// line, 2 more spaces in, and "{}" when there is none.
std::string object_body(const std::vector<std::string>& fields, const std::string& indent) {
  if (fields.empty()) return "{}";
  std::string out = "{";
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? ",\n" : "\n") + indent + "  " + fields[i];
  return out + "\n" + indent + "}";
}

// The members of a ClusterSpec at `indent`: set fields only, in field order.
std::string cluster_spec_body(const EtcdManagerClusterSpec& s, const std::string& indent) {
  std::vector<std::string> fields;
  if (s.member_count != 0) fields.push_back("\"memberCount\": " + std::to_string(s.member_count));
  if (!s.etcd_version.empty()) fields.push_back("\"etcdVersion\": " + json(s.etcd_version).dump());
  return object_body(fields, indent);
}

}  // namespace

std::optional<std::string> etcd_manager_restore_blocker(const std::string& data_file, bool encrypted, bool hash_trailer,
                                                        const std::string& etcd_version) {
  if (encrypted) return "it is encrypted, and etcd-manager cannot decrypt";
  if (data_file != kEtcdManagerDataFile) {
    return "its data file is " + data_file + ", and etcd-manager downloads only " + kEtcdManagerDataFile + " (gzip)";
  }
  if (!hash_trailer) {
    return "its snapshot has no SHA-256 trailer, and etcd-manager runs etcd's restore without --skip-hash-check";
  }
  if (etcd_version.empty()) return "it records no etcd version, and etcd-manager refuses to restore without one";
  auto mm = major_minor(etcd_version);
  if (!mm || mm->first != 3 || mm->second > 6) {
    return "it is from etcd " + etcd_version + ", and " + kEtcdManagerReleaseRead +
           " restores backups of etcd 3.0 to 3.6 only";
  }
  return std::nullopt;
}

std::optional<std::string> etcd_manager_restore_blocker(const BackupRecord& b) {
  return etcd_manager_restore_blocker(b.data_file, b.encrypted(), b.hash_trailer, b.etcd_version);
}

// ---- control files ----

std::string etcd_manager_cluster_spec_json(const EtcdManagerClusterSpec& spec) { return cluster_spec_body(spec, ""); }

std::string etcd_manager_command_json(const EtcdManagerCommand& c) {
  std::vector<std::string> fields;
  if (c.timestamp_nanos != 0) fields.push_back("\"timestamp\": \"" + std::to_string(c.timestamp_nanos) + "\"");
  if (c.restore_backup) {
    // A message field set to an empty message is still written ({}): etcd-manager needs it there.
    std::vector<std::string> inner = {"\"clusterSpec\": " + cluster_spec_body(c.restore_backup->cluster_spec, "    ")};
    if (!c.restore_backup->backup.empty()) inner.push_back("\"backup\": " + json(c.restore_backup->backup).dump());
    fields.push_back("\"restoreBackup\": " + object_body(inner, "  "));
  }
  return object_body(fields, "");
}

std::string etcd_manager_meta_json(const std::string& etcd_version, int64_t unix_seconds, int member_count) {
  std::vector<std::string> fields;
  if (!etcd_version.empty()) fields.push_back("\"etcdVersion\": " + json(etcd_version).dump());
  fields.push_back("\"timestamp\": \"" + std::to_string(unix_seconds) + "\"");
  fields.push_back("\"clusterSpec\": " + cluster_spec_body({member_count, etcd_version}, "  "));
  return object_body(fields, "");
}

EtcdManagerMeta parse_etcd_manager_meta(const std::string& text, const std::string& where) {
  json j = parse_object(text, where);
  EtcdManagerMeta m;
  if (const json* v = field(j, "etcdVersion", "etcd_version")) m.etcd_version = string_of(*v, "etcdVersion", where);
  if (const json* v = field(j, "timestamp", "timestamp")) m.timestamp = integer_of(*v, "timestamp", where);
  if (const json* v = field(j, "clusterSpec", "cluster_spec")) {
    EtcdManagerClusterSpec spec = cluster_spec_from(*v, where);
    m.member_count = spec.member_count;
    if (m.etcd_version.empty()) m.etcd_version = spec.etcd_version;
  }
  return m;
}

std::string etcd_manager_cluster_created_json(int64_t unix_nanos) {
  return "{\"timestamp\":" + std::to_string(unix_nanos) + "}";
}

std::string etcd_manager_command_dir(SystemTime t) { return format_rfc3339_seconds(t) + "-000000"; }

EtcdManagerClusterSpec parse_etcd_manager_cluster_spec(const std::string& text, const std::string& where) {
  return cluster_spec_from(parse_object(text, where), where);
}

EtcdManagerCommand parse_etcd_manager_command(const std::string& text, const std::string& where) {
  json j = parse_object(text, where);
  EtcdManagerCommand c;
  if (const json* v = field(j, "timestamp", "timestamp")) c.timestamp_nanos = integer_of(*v, "timestamp", where);
  if (const json* r = field(j, "restoreBackup", "restore_backup")) {
    if (!r->is_object()) throw Error(ErrorKind::kCorrupt, where + ": \"restoreBackup\" is not an object");
    EtcdManagerRestoreCommand rb;
    if (const json* s = field(*r, "clusterSpec", "cluster_spec")) rb.cluster_spec = cluster_spec_from(*s, where);
    if (const json* b = field(*r, "backup", "backup")) rb.backup = string_of(*b, "backup", where);
    c.restore_backup = rb;
  }
  return c;
}

int64_t parse_etcd_manager_cluster_created(const std::string& text, const std::string& where) {
  json j = parse_object(text, where);
  const json* v = field(j, "timestamp", "timestamp");
  return v ? integer_of(*v, "timestamp", where) : 0;
}

// ---- the control store ----

std::optional<EtcdManagerClusterSpec> read_etcd_manager_cluster_spec(BlobStore& store) {
  if (!store.stat(kEtcdManagerClusterSpecKey)) return std::nullopt;
  return parse_etcd_manager_cluster_spec(store.read_small(kEtcdManagerClusterSpecKey),
                                         store.url() + "/" + kEtcdManagerClusterSpecKey);
}

void write_etcd_manager_cluster_spec(BlobStore& store, const EtcdManagerClusterSpec& spec) {
  store.write_small(kEtcdManagerClusterSpecKey, etcd_manager_cluster_spec_json(spec), /*overwrite=*/true);
}

EtcdManagerClusterSpec configure_etcd_manager_cluster(BlobStore& store, const EtcdManagerClusterSpec& changes) {
  EtcdManagerClusterSpec spec = read_etcd_manager_cluster_spec(store).value_or(EtcdManagerClusterSpec{});
  if (changes.member_count != 0) spec.member_count = changes.member_count;
  if (!changes.etcd_version.empty()) spec.etcd_version = changes.etcd_version;
  if (spec.member_count == 0 || spec.etcd_version.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "store " + store.url() + " has no cluster spec yet",
                "give both --member-count and --etcd-version");
  }
  write_etcd_manager_cluster_spec(store, spec);
  return spec;
}

std::optional<int64_t> read_etcd_manager_cluster_created(BlobStore& store) {
  if (!store.stat(kEtcdManagerClusterCreatedKey)) return std::nullopt;
  return parse_etcd_manager_cluster_created(store.read_small(kEtcdManagerClusterCreatedKey),
                                            store.url() + "/" + kEtcdManagerClusterCreatedKey);
}

std::vector<EtcdManagerCommand> list_etcd_manager_commands(BlobStore& store) {
  std::vector<EtcdManagerCommand> out;
  const std::string suffix = std::string("/") + kEtcdManagerCommandFile;
  // etcd-manager reads every _command.json below control/, at any depth (vfs ReadTree).
  for (const auto& blob : store.list(std::string(kEtcdManagerControlDir) + "/")) {
    if (!blob.key.ends_with(suffix)) continue;
    std::string text;
    try {
      text = store.read_small(blob.key);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kNotFound) continue;  // done and deleted while listing
      throw;
    }
    EtcdManagerCommand c = parse_etcd_manager_command(text, store.url() + "/" + blob.key);
    c.key = blob.key;
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.timestamp_nanos < b.timestamp_nanos; });
  return out;
}

std::string add_etcd_manager_command(BlobStore& store, EtcdManagerCommand command, SystemTime now) {
  command.timestamp_nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  std::string key =
      std::string(kEtcdManagerControlDir) + "/" + etcd_manager_command_dir(now) + "/" + kEtcdManagerCommandFile;
  try {
    store.write_small(key, etcd_manager_command_json(command), /*overwrite=*/false);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kAlreadyExists) throw;
    throw Error(ErrorKind::kAlreadyExists,
                "a command was added to " + store.url() + " in this same second (" + key + ")",
                "check the queue with `etcdadm etcd-manager list-commands`, then try again");
  }
  return key;
}

void remove_etcd_manager_command(BlobStore& store, const EtcdManagerCommand& command) {
  if (command.key.empty()) throw Error(ErrorKind::kInternal, "removing a command that was never stored");
  store.remove(command.key);
}

std::vector<std::string> remove_etcd_manager_commands(BlobStore& store, const std::string& what) {
  std::vector<std::string> removed;
  for (const auto& cmd : list_etcd_manager_commands(store)) {
    if (cmd.key != what && !(cmd.restore_backup && cmd.restore_backup->backup == what)) continue;
    remove_etcd_manager_command(store, cmd);
    removed.push_back(cmd.key);
  }
  if (removed.empty()) {
    throw Error(ErrorKind::kNotFound, "no queued command restores or is named " + what,
                "see the queue with `etcdadm etcd-manager list-commands`");
  }
  return removed;
}

// ---- backups etcd-manager lists ----

std::optional<EtcdManagerListing> etcd_manager_listing(BlobStore& store, const BackupListing& l) {
  if (l.completion_key != l.name + "/" + kEtcdManagerMetaFile) return std::nullopt;  // not listed to it
  EtcdManagerListing e;
  e.name = l.name;
  e.etcdadm_metadata = l.has_backup_meta;
  try {
    // etcd-manager downloads NAME/etcd.backup.gz whatever else is there, and takes the etcd
    // version from _etcd_backup.meta; etcdadm's metadata says whether the snapshot has its trailer.
    BackupRecord r = load_backup_record(store, l);
    std::string data_file = l.data_key.empty() ? "no data file" : l.data_key.substr(l.name.size() + 1);
    // A record without etcdadm metadata was read from _etcd_backup.meta already.
    std::string version = l.has_backup_meta ? parse_etcd_manager_meta(store.read_small(l.completion_key),
                                                                      store.url() + "/" + l.completion_key)
                                                  .etcd_version
                                            : r.etcd_version;
    e.blocker = etcd_manager_restore_blocker(data_file, r.encrypted(), r.hash_trailer, version);
    if (!e.blocker && r.damage) e.blocker = "it is known to be damaged (" + r.damage->reason + ")";
  } catch (const Error& err) {
    e.blocker = std::string("its metadata is unreadable: ") + err.what();
  }
  return e;
}

std::vector<EtcdManagerListing> etcd_manager_listings(BlobStore& store) {
  std::vector<EtcdManagerListing> out;
  for (const auto& l : scan_backups(store)) {
    if (auto e = etcd_manager_listing(store, l)) out.push_back(std::move(*e));
  }
  return out;
}

void hide_from_etcd_manager(BlobStore& store, const EtcdManagerListing& backup) {
  if (!backup.etcdadm_metadata) {
    throw Error(
        ErrorKind::kInvalidArgument,
        "backup " + backup.name + " has no " + kBackupMetaFile + ": without " + kEtcdManagerMetaFile +
            " no tool would list it any more",
        "leave it and never restore it with etcd-manager, or delete the directory " + backup.name + "/ from the store");
  }
  allow_etcdadm_only_backups(store);
  store.remove(backup.name + "/" + kEtcdManagerMetaFile);
  spdlog::info("backup {} is no longer listed to etcd-manager", backup.name);
}

std::vector<EtcdManagerFinding> check_etcd_manager_store(BlobStore& store, bool fix) {
  std::vector<EtcdManagerFinding> out;
  std::set<std::string> restorable;
  for (const auto& l : etcd_manager_listings(store)) {
    if (!l.blocker) {
      restorable.insert(l.name);
      continue;
    }
    EtcdManagerFinding f{l.name, *l.blocker, "", false};
    if (fix && l.etcdadm_metadata) {
      hide_from_etcd_manager(store, l);
      f.hidden = true;
    }
    out.push_back(std::move(f));
  }
  for (const auto& cmd : list_etcd_manager_commands(store)) {
    if (!cmd.restore_backup || restorable.count(cmd.restore_backup->backup)) continue;
    out.push_back({cmd.restore_backup->backup,
                   "queued command " + cmd.key + " restores " + cmd.restore_backup->backup +
                       ", which etcd-manager does not list or cannot restore",
                   cmd.key, false});
  }
  return out;
}

}  // namespace etcdadm

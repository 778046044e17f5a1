#include "store/layout.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "common/error.h"
#include "common/json_fields.h"
#include "common/text.h"
#include "store/blob_capabilities.h"
#include "store/etcd_manager.h"

namespace etcdadm {

using json = nlohmann::json;

std::string make_backup_name(SystemTime t) {
  int64_t us = to_unix_micros(t);
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "-%06lld", static_cast<long long>(us % 1000000));
  return format_rfc3339_seconds(t) + suffix;
}

std::optional<ParsedName> parse_backup_name(const std::string& name) {
  // 2019-05-07T18:28:01Z-000977 : 20 characters of time, '-', 6 digits.
  if (name.size() != 27 || name[20] != '-') return std::nullopt;
  auto t = parse_rfc3339(name.substr(0, 20));
  if (!t) return std::nullopt;
  int64_t suffix = 0;
  for (size_t i = 21; i < 27; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    suffix = suffix * 10 + (name[i] - '0');
  }
  return ParsedName{*t + std::chrono::microseconds(suffix), suffix};
}

std::string data_file_name(Compression c, bool encrypted) {
  return std::string(kDataFileStem) + compression_extension(c) + (encrypted ? kAgeFileExtension : "");
}

// ---- store marker ----

namespace {

// Why a mode is not one a store may have, or "" when it is.
std::string store_mode_problem(uint32_t mode) {
  if (mode > 0777) return "only permission bits are allowed (no setuid, setgid or sticky)";
  if ((mode & 0600) != 0600)
    return "the owner must be able to read and write (prune, verify and the next save need it)";
  if ((mode & 0111) != 0) return "execute bits make no sense on backup files";
  if ((mode & 0007) != 0) return "other users must get nothing: a backup holds every Secret of the cluster";
  if ((mode & 0060) == 0020) return "group write without group read makes no sense";
  return "";
}

std::string marker_json(const StoreSettings& s) {
  json j = {{"layoutVersion", s.layout_version},
            {"compression", compression_name(s.compression)},
            {"createdAt", s.created_at},
            {"createdBy", s.created_by}};
  if (s.file_mode) j["fileMode"] = octal_mode(*s.file_mode);
  if (s.encryption) j["encryption"] = store_encryption_json(*s.encryption);
  return j.dump(2) + "\n";
}

void warn_about_access(BlobStore& store, const StoreSettings& s) {
  for (const auto& finding : access_findings(store, s.effective_file_mode())) spdlog::warn("{}", finding);
}

}  // namespace

uint32_t parse_store_file_mode(const std::string& text) {
  bool octal = !text.empty() && text.size() <= 5 && text.find_first_not_of("01234567") == std::string::npos;
  if (!octal) {
    throw Error(ErrorKind::kInvalidArgument, "invalid store mode '" + text + "': not an octal file mode",
                "e.g. 0600 (owner only, the default) or 0640 (a backup group may read)");
  }
  uint32_t mode = static_cast<uint32_t>(std::stoul(text, nullptr, 8));
  if (std::string why = store_mode_problem(mode); !why.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "store mode " + octal_mode(mode) + " refused: " + why,
                "use 0600 (owner only), 0640 (group may read) or 0660 (group may read and write)");
  }
  return mode;
}

std::optional<StoreSettings> read_store_settings(BlobStore& store) {
  if (!store.stat(kStoreMarkerFile)) return std::nullopt;
  return parse_store_settings(store.read_small(kStoreMarkerFile), store.url() + "/" + kStoreMarkerFile);
}

StoreSettings parse_store_settings(const std::string& text, const std::string& where) {
  StoreSettings s;
  try {
    json j = json::parse(text);
    if (!j.is_object()) throw Error(ErrorKind::kCorrupt, "store marker " + where + " is not a JSON object");
    s.layout_version = integer_field<int>(j, "layoutVersion", where).value_or(0);
    auto c = parse_compression(j.value("compression", "gzip"));
    if (!c) throw Error(ErrorKind::kCorrupt, "unknown compression '" + j.value("compression", "") + "' in " + where);
    s.compression = *c;
    if (j.contains("fileMode")) {
      try {
        s.file_mode = parse_store_file_mode(j.at("fileMode").get<std::string>());
      } catch (const Error& e) {
        throw Error(ErrorKind::kCorrupt, "store marker " + where + ": " + e.what(),
                    "set \"fileMode\" to \"0600\", \"0640\" or \"0660\"");
      }
    }
    s.created_at = j.value("createdAt", "");
    s.created_by = j.value("createdBy", "");
    if (s.layout_version > kNewestLayoutVersion) {
      throw Error(ErrorKind::kInvalidArgument,
                  where + " says layout version " + std::to_string(s.layout_version) +
                      ", newer than this etcdadm understands (" + std::to_string(kNewestLayoutVersion) + ")",
                  "upgrade etcdadm");
    }
    if (j.contains("encryption")) s.encryption = parse_store_encryption(j["encryption"], where);
    if (s.encryption && s.layout_version < kEncryptedLayoutVersion) {
      // An older etcdadm would read this marker and write plain backups into an encrypted store.
      throw Error(ErrorKind::kCorrupt, "store marker " + where + " has \"encryption\" but layout version " +
                                           std::to_string(s.layout_version) + " (an encrypted store is version 2)");
    }
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kCorrupt, "store marker " + where + " is not valid JSON: " + e.what());
  }
  return s;
}

StoreSettings ensure_store_settings(BlobStore& store, const StoreRequest& requested,
                                    const std::function<void()>& before_creating) {
  if (auto existing = read_store_settings(store)) {
    check_encryption_request(existing->encryption, requested.encryption, store.url());
    if (requested.compression && *requested.compression != existing->compression) {
      throw Error(ErrorKind::kInvalidArgument,
                  std::string("store ") + store.url() + " was created with compression " +
                      compression_name(existing->compression) + ", not " + compression_name(*requested.compression),
                  "drop --compression, or use a new store for a different compression");
    }
    if (requested.file_mode && existing->file_mode && *requested.file_mode != *existing->file_mode) {
      throw Error(
          ErrorKind::kInvalidArgument,
          "store " + store.url() + " was created with file mode " + octal_mode(*existing->file_mode) + ", not " +
              octal_mode(*requested.file_mode),
          "drop --store-mode; to change a store's mode, chmod its files and directories and edit \"fileMode\" in " +
              std::string(kStoreMarkerFile) + " (docs/store-format.md)");
    }
    // A store from before file modes: its marker learns the mode asked for.
    bool record_mode = requested.file_mode && !existing->file_mode;
    if (record_mode) existing->file_mode = requested.file_mode;
    set_file_mode(store, existing->effective_file_mode());
    if (record_mode) store.write_small(kStoreMarkerFile, marker_json(*existing), /*overwrite=*/true);
    warn_about_access(store, *existing);
    return *existing;
  }
  if (before_creating) before_creating();
  StoreSettings s;
  s.compression = requested.compression.value_or(Compression::kGzip);
  s.file_mode = requested.file_mode.value_or(kDefaultStoreFileMode);
  s.encryption = new_store_encryption(requested.encryption);
  if (s.encryption) {
    s.layout_version = kEncryptedLayoutVersion;
  } else if (s.compression != Compression::kGzip) {
    // etcd-manager restores gzip only: no backup of this store will carry its file.
    s.layout_version = kEtcdadmOnlyBackupsLayoutVersion;
  }
  s.created_at = format_rfc3339_seconds(std::chrono::system_clock::now());
  s.created_by = std::string("etcdadm ") + ETCDADM_VERSION;
  // Before the marker, which is the first file of a new store and as private as the rest.
  set_file_mode(store, *s.file_mode);
  try {
    store.write_small(kStoreMarkerFile, marker_json(s), /*overwrite=*/false);
  } catch (const Error& e) {
    // Another writer created it first: theirs counts.
    if (e.kind() != ErrorKind::kAlreadyExists) throw;
    return ensure_store_settings(store, requested, before_creating);
  }
  // An etcd-manager store (no marker) may hold backups written with looser modes.
  warn_about_access(store, s);
  return s;
}

void apply_store_settings(BlobStore& store) {
  auto s = read_store_settings(store);
  set_file_mode(store, s ? s->effective_file_mode() : kDefaultStoreFileMode);
}

void allow_etcdadm_only_backups(BlobStore& store) {
  auto s = read_store_settings(store);
  if (!s) {
    throw Error(ErrorKind::kInvalidArgument, "store " + store.url() + " has no " + kStoreMarkerFile,
                "a backup without _etcd_backup.meta needs the marker's layout version 3 (docs/store-format.md); "
                "save one backup with etcdadm first, which writes the marker");
  }
  if (s->layout_version >= kEncryptedLayoutVersion) return;
  s->layout_version = kEtcdadmOnlyBackupsLayoutVersion;
  set_file_mode(store, s->effective_file_mode());
  store.write_small(kStoreMarkerFile, marker_json(*s), /*overwrite=*/true);
  spdlog::info(
      "store {} moved to layout version {}: it holds backups etcd-manager cannot restore, which only "
      "etcdadm lists (etcdadm before this version refuses the store)",
      store.url(), kEtcdadmOnlyBackupsLayoutVersion);
}

StoreSettings change_store_recipients(BlobStore& store, const EncryptionRequest& to) {
  auto s = read_store_settings(store);
  if (!s || !s->encryption) {
    throw Error(ErrorKind::kInvalidArgument,
                "store " + store.url() + " is not encrypted: it has no recipients to change",
                "a store is encrypted from its creation on: save encrypted backups into a new store");
  }
  s->encryption = new_store_encryption(to);
  set_file_mode(store, s->effective_file_mode());
  // One atomic overwrite: a save reads the old recipients or the new ones, never a mix.
  store.write_small(kStoreMarkerFile, marker_json(*s), /*overwrite=*/true);
  return *s;
}

// ---- metadata ----

std::string backup_meta_to_json(const BackupMeta& m) {
  json j = {
      {"layoutVersion", m.layout_version}, {"name", m.name},
      {"createdAt", m.created_at},         {"source", m.source},
      {"dataFile", m.data_file},           {"compression", compression_name(m.compression)},
      {"encryption", m.encryption},        {"dbSize", m.db_size},
      {"snapshotSize", m.snapshot_size},   {"storedSize", m.stored_size},
      {"dbSha256", m.db_sha256},           {"storedSha256", m.stored_sha256},
      {"hashTrailer", m.hash_trailer},     {"revision", m.revision ? json(*m.revision) : json(nullptr)},
      {"revisionExact", m.revision_exact}, {"raftIndex", m.raft_index},
      {"raftTerm", m.raft_term},           {"etcdVersion", m.etcd_version},
      {"clusterId", m.cluster_id},         {"memberId", m.member_id},
      {"memberName", m.member_name},       {"endpoint", m.endpoint},
      {"fromLeader", m.from_leader},       {"memberCount", m.member_count},
      {"toolVersion", m.tool_version},     {"durationSeconds", m.duration_seconds},
  };
  if (!m.storage_version.empty()) j["storageVersion"] = m.storage_version;  // layout v1 addition (3.6+ members)
  if (m.encryption != kEncryptionNone) j["encryptedTo"] = m.encrypted_to;   // layout v2
  if (m.source_hash) {                                                      // layout v1 addition
    j["sourceHashKV"] = {{"revision", m.source_hash->revision},
                         {"hash", m.source_hash->hash},
                         {"compactRevision", m.source_hash->compact_revision}};
  }
  if (m.rekey) {
    j["rekeyInProgress"] = {{"storedSha256", m.rekey->stored_sha256},
                            {"storedSize", m.rekey->stored_size},
                            {"encryptedTo", m.rekey->encrypted_to}};
  }
  return j.dump(2) + "\n";
}

BackupMeta backup_meta_from_json(const std::string& text, const std::string& where) {
  BackupMeta m;
  try {
    json j = json::parse(text);
    m.layout_version = required_integer<int>(j, "layoutVersion", where);
    m.name = j.value("name", "");
    m.created_at = j.value("createdAt", "");
    m.source = j.value("source", "snapshot");
    m.data_file = j.at("dataFile").get<std::string>();
    auto c = parse_compression(j.value("compression", "gzip"));
    if (!c) throw Error(ErrorKind::kCorrupt, where + ": unknown compression " + j.value("compression", ""));
    m.compression = *c;
    m.encryption = j.value("encryption", kEncryptionNone);
    if (auto to = j.find("encryptedTo"); to != j.end() && !to->is_null())
      m.encrypted_to = to->get<std::vector<std::string>>();
    if (auto rk = j.find("rekeyInProgress"); rk != j.end() && !rk->is_null()) {
      RekeyInProgress r;
      r.stored_sha256 = rk->at("storedSha256").get<std::string>();
      r.stored_size = required_integer<uint64_t>(*rk, "storedSize", where);
      r.encrypted_to = rk->at("encryptedTo").get<std::vector<std::string>>();
      m.rekey = r;
    }
    m.db_size = integer_field<uint64_t>(j, "dbSize", where).value_or(0);
    m.snapshot_size = integer_field<uint64_t>(j, "snapshotSize", where).value_or(0);
    m.stored_size = required_integer<uint64_t>(j, "storedSize", where);
    m.db_sha256 = j.value("dbSha256", "");
    m.stored_sha256 = j.value("storedSha256", "");
    m.hash_trailer = j.value("hashTrailer", true);
    m.revision = integer_field<int64_t>(j, "revision", where);
    m.revision_exact = j.value("revisionExact", false);
    m.raft_index = integer_field<uint64_t>(j, "raftIndex", where).value_or(0);
    m.raft_term = integer_field<uint64_t>(j, "raftTerm", where).value_or(0);
    m.etcd_version = j.value("etcdVersion", "");
    m.storage_version = j.value("storageVersion", "");
    m.cluster_id = j.value("clusterId", "");
    m.member_id = j.value("memberId", "");
    m.member_name = j.value("memberName", "");
    m.endpoint = j.value("endpoint", "");
    m.from_leader = j.value("fromLeader", false);
    m.member_count = integer_field<int>(j, "memberCount", where).value_or(0);
    m.tool_version = j.value("toolVersion", "");
    m.duration_seconds = j.value("durationSeconds", 0.0);
    if (auto h = j.find("sourceHashKV"); h != j.end() && !h->is_null()) {
      SourceHashKv sh;
      sh.revision = required_integer<int64_t>(*h, "revision", where);
      sh.hash = required_integer<uint32_t>(*h, "hash", where);
      sh.compact_revision = integer_field<int64_t>(*h, "compactRevision", where).value_or(0);
      m.source_hash = sh;
    }
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kCorrupt, where + " is not valid backup metadata: " + e.what());
  }
  if (m.encryption != kEncryptionNone && m.encryption != kEncryptionAge) {
    throw Error(ErrorKind::kInvalidArgument,
                where + " is encrypted (" + m.encryption + "), which this etcdadm cannot read", "upgrade etcdadm");
  }
  // The data file's name is the format's, never a path the metadata chooses: a "../x" or "a/b"
  // would be read (and copied) from outside the backup's directory.
  const std::string expected_data_file = data_file_name(m.compression, m.encryption == kEncryptionAge);
  if (m.data_file != expected_data_file) {
    throw Error(ErrorKind::kCorrupt, where + " names the data file '" + m.data_file.substr(0, 200) +
                                         "'; a backup compressed with " + compression_name(m.compression) +
                                         (m.encryption == kEncryptionAge ? " and encrypted" : "") + " has '" +
                                         expected_data_file + "'");
  }
  return m;
}

// ---- listing ----

std::vector<BackupListing> backups_in_listing(const std::vector<BlobInfo>& blobs) {
  std::map<std::string, BackupListing> dirs;
  std::map<std::string, bool> complete;
  for (const auto& blob : blobs) {
    auto slash = blob.key.find('/');
    if (slash == std::string::npos) continue;  // store-level files (marker)
    std::string dir = blob.key.substr(0, slash);
    std::string file = blob.key.substr(slash + 1);
    if (file.find('/') != std::string::npos) continue;  // deeper trees are not backups (e.g. control/)
    auto& l = dirs[dir];
    l.name = dir;
    if (file == kEtcdManagerMetaFile)
      complete[dir] = true;
    else if (file == kBackupMetaFile)
      l.has_backup_meta = true;
    else if (file == kDamageMarkerFile)
      l.has_damage_marker = true;
    else if (file == kDrillResultFile)
      l.drill_modified_micros = std::max<int64_t>(blob.modified_unix_micros, 1);
    else if (file.rfind(kDataFileStem, 0) == 0) {
      // Prefer the name the layout writes; a stray second data file is ignored.
      if (l.data_key.empty() || file == "etcd.backup.gz") {
        l.data_key = blob.key;
        l.data_size = blob.size;
        l.data_modified_micros = blob.modified_unix_micros;
      }
    }
  }
  std::vector<BackupListing> out;
  for (auto& [dir, l] : dirs) {
    if (complete.count(dir)) {
      l.completion_key = dir + "/" + kEtcdManagerMetaFile;
    } else if (l.has_backup_meta && !l.data_key.empty()) {
      // Layouts 2 and 3: a backup etcd-manager could not restore (encrypted, not gzip, no trailer,
      // no etcd version...) ends with our metadata, written after its data file was checked.
      l.completion_key = dir + "/" + kBackupMetaFile;
    } else {
      continue;
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<BackupListing> scan_backups(BlobStore& store) { return backups_in_listing(store.list("")); }

std::vector<BackupListing> scan_backups_after(BlobStore& store, const std::string& after) {
  return backups_in_listing(store.list_range(after, kBackupNamesEnd));
}

BackupRecord record_from_meta(const BackupMeta& m) {
  BackupRecord r;
  r.name = m.name;
  r.format = "etcdadm";
  r.data_file = m.data_file;
  r.compression = m.compression;
  r.encryption = m.encryption;
  r.encrypted_to = m.encrypted_to;
  r.rekey = m.rekey;
  r.stored_size = m.stored_size;
  r.db_size = m.db_size;
  r.revision = m.revision;
  r.revision_exact = m.revision_exact;
  r.db_sha256 = m.db_sha256;
  r.stored_sha256 = m.stored_sha256;
  r.hash_trailer = m.hash_trailer;
  r.etcd_version = m.etcd_version;
  r.cluster_id = m.cluster_id;
  r.member_id = m.member_id;
  r.source = m.source;
  r.source_hash = m.source_hash;
  if (auto t = parse_rfc3339(m.created_at)) r.taken_at_micros = to_unix_micros(*t);
  return r;
}

BackupRecord load_backup_record(BlobStore& store, const BackupListing& l) {
  BackupRecord r;
  if (l.has_backup_meta) {
    std::string key = l.name + "/" + kBackupMetaFile;
    r = record_from_meta(backup_meta_from_json(store.read_small(key), store.url() + "/" + key));
    r.name = l.name;
    // Metadata naming a data file the listing lacks: no backup to restore (restore/resolve.h,
    // why_not_latest), whatever it says of itself.
    if (l.data_key.empty()) r.data_file.clear();
  } else {
    std::string key = l.name + "/" + kEtcdManagerMetaFile;
    EtcdManagerMeta em = parse_etcd_manager_meta(store.read_small(key), store.url() + "/" + key);
    r.name = l.name;
    r.format = "etcd-manager";
    r.source = "etcd-manager";
    r.etcd_version = em.etcd_version;
    if (em.timestamp) r.taken_at_micros = *em.timestamp * 1000000;
    r.data_file = l.data_key.empty() ? "" : l.data_key.substr(l.data_key.find('/') + 1);
    r.stored_size = l.data_size;
    // A directory holding only _etcd_backup.meta has no data file: no extension to read (it is
    // listed, and prune and restore say that its data file is missing).
    std::string ext = r.data_file.size() > std::string(kDataFileStem).size()
                          ? r.data_file.substr(std::string(kDataFileStem).size())
                          : std::string();
    r.compression = ext == ".zst" ? Compression::kZstd : ext.empty() ? Compression::kNone : Compression::kGzip;
  }
  if (r.taken_at_micros == 0) {
    if (auto p = parse_backup_name(l.name)) r.taken_at_micros = to_unix_micros(p->time);
  }
  r.data_modified_micros = l.data_modified_micros;
  if (l.has_damage_marker) {
    std::string key = l.name + "/" + kDamageMarkerFile;
    try {
      r.damage = parse_damage_marker(store.read_small(key), store.url() + "/" + key);
    } catch (const Error& e) {
      // A marker we cannot read still says someone found this backup damaged.
      r.damage = DamageRecord{0, "damage marker present but unreadable (" + std::string(e.what()) + ")", "", true};
    }
    r.damage->in_store = true;
  }
  if (l.drill_modified_micros != 0) {
    std::string key = l.name + "/" + kDrillResultFile;
    try {
      r.drill = parse_drill_result(store.read_small(key), store.url() + "/" + key);
      r.drill->file_modified_micros = l.drill_modified_micros;
    } catch (const Error& e) {
      // The backup is no worse for it; `backup list` then shows it as never drilled.
      spdlog::warn("ignoring the drill result of backup {}: {}", l.name, e.what());
    }
  }
  return r;
}

std::vector<std::string> BackupRecord::recipients() const {
  std::vector<std::string> out = encrypted_to;
  if (rekey) {
    for (const auto& r : rekey->encrypted_to) {
      if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
    }
  }
  return out;
}

BackupRecord reload_backup_record(BlobStore& store, const BackupRecord& b) {
  std::string key = b.name + "/" + kBackupMetaFile;
  BackupRecord r = record_from_meta(backup_meta_from_json(store.read_small(key), store.url() + "/" + key));
  r.name = b.name;
  if (r.taken_at_micros == 0) r.taken_at_micros = b.taken_at_micros;
  r.verification = b.verification;
  r.damage = b.damage;
  r.drill = b.drill;
  return r;
}

BackupRecord unreadable_backup_record(const BackupListing& l, const std::string& reason) {
  BackupRecord r;
  r.name = l.name;
  r.format = kUnreadableFormat;
  r.source = "";
  r.data_file = l.data_key.empty() ? "" : l.data_key.substr(l.data_key.find('/') + 1);
  r.stored_size = l.data_size;
  if (auto p = parse_backup_name(l.name)) r.taken_at_micros = to_unix_micros(p->time);
  r.damage =
      DamageRecord{to_unix_micros(std::chrono::system_clock::now()), "metadata unreadable: " + reason, "", false};
  return r;
}

std::string damage_marker_json(const DamageRecord& d) {
  json j = {{"layoutVersion", kLayoutVersion},
            {"detectedAt", format_rfc3339_micros(from_unix_micros(d.detected_at_micros))},
            {"reason", d.reason},
            {"detectedBy", d.detected_by}};
  return j.dump(2) + "\n";
}

DamageRecord parse_damage_marker(const std::string& text, const std::string& where) {
  DamageRecord d;
  try {
    json j = json::parse(text);
    if (!j.is_object() || !j.contains("reason")) throw Error(ErrorKind::kCorrupt, where + " has no reason");
    d.reason = j["reason"].get<std::string>();
    d.detected_by = j.value("detectedBy", "");
    if (auto t = parse_rfc3339(j.value("detectedAt", ""))) d.detected_at_micros = to_unix_micros(*t);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kCorrupt, where + " is not valid JSON: " + e.what());
  }
  d.in_store = true;
  return d;
}

std::string drill_result_json(const DrillRecord& d, const std::string& details_json) {
  json j = {{"layoutVersion", kLayoutVersion},
            {"drilledAt", format_rfc3339_micros(from_unix_micros(d.drilled_at_micros))},
            {"result", d.passed ? "passed" : "failed"},
            {"rtoSeconds", d.rto_seconds},
            {"message", d.message},
            {"drilledBy", d.drilled_by},
            {"etcdVersion", d.etcd_version}};
  if (!details_json.empty()) j["details"] = json::parse(details_json);
  return j.dump(2) + "\n";
}

DrillRecord parse_drill_result(const std::string& text, const std::string& where) {
  DrillRecord d;
  try {
    json j = json::parse(text);
    if (!j.is_object()) throw Error(ErrorKind::kCorrupt, where + " is not a JSON object");
    const std::string result = j.at("result").get<std::string>();
    if (result != "passed" && result != "failed")
      throw Error(ErrorKind::kCorrupt, where + ": unknown result " + result);
    d.passed = result == "passed";
    auto t = parse_rfc3339(j.at("drilledAt").get<std::string>());
    if (!t) throw Error(ErrorKind::kCorrupt, where + ": drilledAt is not an RFC 3339 time");
    d.drilled_at_micros = to_unix_micros(*t);
    d.rto_seconds = j.value("rtoSeconds", 0.0);
    d.message = j.value("message", "");
    d.drilled_by = j.value("drilledBy", "");
    d.etcd_version = j.value("etcdVersion", "");
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kCorrupt, where + " is not a valid drill result: " + e.what());
  }
  return d;
}

}  // namespace etcdadm

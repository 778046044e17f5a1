// Store layout v1, v2 and v3 (docs/store-format.md is the normative prose). A backup is the
// directory <name>/ holding, in write order:
//   1. etcd.backup.gz | etcd.backup.zst | etcd.backup   the snapshot db + SHA-256 trailer
//   2. etcdadm-backup.json                               our metadata (BackupMeta)
//   3. _etcd_backup.meta                                 etcd-manager's metadata, exactly its fields
// (3) is written only when etcd-manager could restore the backup (store/etcd_manager.h); a backup
// exists once (3) exists, or once (1) and (2) do. The store root holds etcdadm-store.json
// (StoreSettings). Stores written by etcd-manager (no marker, no etcdadm-backup.json) are read as well.
// Layout v2 is a store encrypted with age (store/encryption.h): its data files end in ".age" and
// never have (3). Layout v3 is a plain store holding backups without (3). Etcdadm before v2 (v3)
// refuses such a store whole, so that it never writes a plain backup into an encrypted store, nor
// prunes a backup without (3) as the leftover of a killed save.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/timefmt.h"
#include "store/blob_store.h"
#include "store/codec.h"
#include "store/encryption.h"

namespace etcdadm {

inline constexpr int kLayoutVersion = 1;           // what plain stores and all backup metadata say
inline constexpr int kEncryptedLayoutVersion = 2;  // an encrypted store's marker
// A plain store that may hold backups etcd-manager could not restore, which therefore have no
// _etcd_backup.meta and are complete by their etcdadm-backup.json (as encrypted ones are in v2).
// Etcdadm before v3 would take them for leftovers of killed saves and prune them: it refuses the
// store instead.
inline constexpr int kEtcdadmOnlyBackupsLayoutVersion = 3;
inline constexpr int kNewestLayoutVersion = 3;  // the newest this etcdadm reads and writes
inline constexpr const char* kEtcdManagerMetaFile = "_etcd_backup.meta";
inline constexpr const char* kBackupMetaFile = "etcdadm-backup.json";
inline constexpr const char* kStoreMarkerFile = "etcdadm-store.json";
inline constexpr const char* kDataFileStem = "etcd.backup";
// Written into a backup's directory by whoever found the backup damaged (docs/store-format.md §4.4).
inline constexpr const char* kDamageMarkerFile = "etcdadm-damage.json";
// Written into a backup's directory by `backup drill` with the result of the last drill
// (docs/store-format.md §4b); replaced by each drill.
inline constexpr const char* kDrillResultFile = "etcdadm-drill.json";

// ---- names ----
// "<UTC RFC3339 seconds>-<6 digits>"; we put the microseconds of that second in the digits.
std::string make_backup_name(SystemTime t);
struct ParsedName {
  SystemTime time;  // seconds precision (+ the 6 digits as microseconds, etcd-manager-compatible order)
  int64_t suffix = 0;
};
std::optional<ParsedName> parse_backup_name(const std::string& name);
// "etcd.backup.gz", and "etcd.backup.gz.age" when encrypted.
std::string data_file_name(Compression c, bool encrypted);

// ---- store marker ----
// The mode of backup files in a local store unless its marker records another: a backup holds
// every Secret of the cluster, as private as `etcdctl snapshot save` makes its file.
inline constexpr uint32_t kDefaultStoreFileMode = 0600;
struct StoreSettings {
  int layout_version = kLayoutVersion;
  Compression compression = Compression::kGzip;
  // "fileMode" in the marker; absent in stores made before it existed, which then get the default.
  std::optional<uint32_t> file_mode;
  // "encryption" in the marker (layout v2); nullopt: backups are stored in the clear.
  std::optional<StoreEncryption> encryption;
  std::string created_at;
  std::string created_by;
  uint32_t effective_file_mode() const { return file_mode.value_or(kDefaultStoreFileMode); }
};
// What a writing command asks of a store it may create (flags --compression, --store-mode).
struct StoreRequest {
  std::optional<Compression> compression;
  std::optional<uint32_t> file_mode;
  // Recipients for a new store; the passphrase of a passphrase store (--passphrase-file).
  EncryptionRequest encryption;
};
// Parses a --store-mode value: octal, owner read+write, group nothing, read or read+write, others
// nothing (0600, 0640, 0660). Throws kInvalidArgument naming what is wrong.
uint32_t parse_store_file_mode(const std::string& text);
std::optional<StoreSettings> read_store_settings(BlobStore& store);
// The marker's text; `where` names it in errors (kCorrupt; kInvalidArgument for a newer layout).
StoreSettings parse_store_settings(const std::string& text, const std::string& where);
// Returns the store's settings, writing the marker when the store has none, and sets the store's
// file mode from them (FileModes::set_file_mode). A requested compression, file mode or
// encryption that contradicts the marker is refused (kInvalidArgument): one store, one format and
// one audience, so that every reader knows what to expect. A marker from before file modes gets the requested
// mode recorded. Logs a warning for each FileModes::access_findings line. `before_creating`, when
// set, runs before a new marker is written and may throw to refuse it (store/audience.h).
StoreSettings ensure_store_settings(BlobStore& store, const StoreRequest& requested,
                                    const std::function<void()>& before_creating = {});
// The settings of an existing store applied to `store` (its file mode), for commands that add to
// a store without creating it (damage markers). No marker: the defaults.
void apply_store_settings(BlobStore& store);
// Makes sure the marker allows backups without _etcd_backup.meta (layout 2 or 3), rewriting a
// layout 1 marker as layout 3; called before the first such backup becomes complete. A store
// without a marker is refused (kInvalidArgument): every etcdadm store has one.
void allow_etcdadm_only_backups(BlobStore& store);
// Replaces the marker's recipients (`backup rekey --encrypt-to`): backups saved from now on are
// encrypted to `to`. The store must be encrypted already (kInvalidArgument otherwise).
StoreSettings change_store_recipients(BlobStore& store, const EncryptionRequest& to);

// ---- per-backup metadata ----
// The source member's HashKV at the backup's revision, asked right after the snapshot
// ("sourceHashKV", a layout v1 addition): what a member restored from the backup must answer to
// HashKV at the same revision (`backup drill`). etcd hashes the key bucket's revisions from its
// compaction point up to `revision`, so the answer depends on the compaction revision too.
struct SourceHashKv {
  int64_t revision = 0;  // the revision it was asked at (= BackupMeta::revision)
  uint32_t hash = 0;
  int64_t compact_revision = 0;  // the source's compaction revision when it answered
};

// A `backup rekey` under way (layout v2, "rekeyInProgress"): the data file is being replaced by
// one whose age header is for `encrypted_to`. Until the metadata is rewritten without it, either
// data file is the backup, so readers accept both digests and both recipient lists.
struct RekeyInProgress {
  std::string stored_sha256;
  uint64_t stored_size = 0;
  std::vector<std::string> encrypted_to;
};
struct BackupMeta {
  int layout_version = kLayoutVersion;
  std::string name;
  std::string created_at;           // RFC3339 with microseconds, UTC: when the snapshot was requested
  std::string source = "snapshot";  // "snapshot" (streamed from a member) | "import" (a file)
  std::string data_file;            // file name inside the backup directory
  Compression compression = Compression::kGzip;
  std::string encryption = kEncryptionNone;  // "none" | "age"
  // age: who can open the data file, by public key ("age1...") or "scrypt" for a passphrase.
  std::vector<std::string> encrypted_to;
  std::optional<RekeyInProgress> rekey;
  uint64_t db_size = 0;             // bytes of the bbolt db (trailer excluded)
  uint64_t snapshot_size = 0;       // bytes before compression (db + trailer when present)
  uint64_t stored_size = 0;         // bytes of the data file
  std::string db_sha256;            // hex SHA-256 of the db bytes (== the trailer when present)
  std::string stored_sha256;        // hex SHA-256 of the data file
  bool hash_trailer = true;         // the snapshot ends with its SHA-256 trailer
  std::optional<int64_t> revision;  // store revision of the snapshot (see revision_exact)
  bool revision_exact = false;      // false: `revision` is a lower bound (writes raced the snapshot)
  uint64_t raft_index = 0;
  uint64_t raft_term = 0;
  std::string etcd_version;     // the member's server version ("3.6.16")
  std::string storage_version;  // its storage version from the snapshot stream (3.6+: "3.6.0"), else ""
  std::string cluster_id;       // hex, as etcdctl prints it
  std::string member_id;        // hex: the member the snapshot came from
  std::string member_name;
  std::string endpoint;
  bool from_leader = false;
  int member_count = 0;
  std::string tool_version;
  double duration_seconds = 0;
  std::optional<SourceHashKv> source_hash;  // none: taken before etcdadm recorded it, or HashKV failed
};
std::string backup_meta_to_json(const BackupMeta& m);
// Throws kCorrupt when the JSON is unreadable or misses required fields.
BackupMeta backup_meta_from_json(const std::string& json, const std::string& where);

// ---- what a store holds ----
// One complete backup as seen in a listing (no metadata read yet).
struct BackupListing {
  std::string name;
  std::string data_key;  // key of the data file ("" when the directory has none)
  uint64_t data_size = 0;
  bool has_backup_meta = false;       // etcdadm-backup.json present
  bool has_damage_marker = false;     // etcdadm-damage.json present
  int64_t drill_modified_micros = 0;  // etcdadm-drill.json's modification time; 0: never drilled
  int64_t data_modified_micros = 0;   // the data file's modification time (a rekey replaces it)
  // The file whose presence makes the backup exist: _etcd_backup.meta, or etcdadm-backup.json for
  // an encrypted one. Deleting a backup removes it first.
  std::string completion_key;
};
// Lists complete backups (directories holding _etcd_backup.meta, or an encrypted data file and
// etcdadm-backup.json), sorted by name.
std::vector<BackupListing> scan_backups(BlobStore& store);
// The same, of a listing already made (list("") of the store).
std::vector<BackupListing> backups_in_listing(const std::vector<BlobInfo>& blobs);
// The same, of the backups named after `after` only (the catalog's incremental sync): one range
// listing that ends before the store's other top-level keys (changelog/, control/, the marker),
// since every backup name starts with its year's digits and ':' sorts right after '9'.
inline constexpr const char* kBackupNamesEnd = ":";
std::vector<BackupListing> scan_backups_after(BlobStore& store, const std::string& after);

// The result of the last structural verification (`backup verify`), cached in the catalog only:
// it is not in the store, so a catalog rebuild loses it.
struct VerificationRecord {
  int64_t revision = 0;    // the snapshot's store revision, read from its db
  int64_t total_key = 0;   // entries in the key bucket (etcdctl snapshot status totalKey)
  uint64_t live_keys = 0;  // keys whose latest revision is not a tombstone
  uint32_t hash = 0;       // etcdctl snapshot status hash (CRC-32C)
  int64_t verified_at_micros = 0;
};

// A backup found damaged: its data failed a check (hash, decompression, trailer, structure) or its
// metadata is unreadable. `in_store`: the store carries the damage marker (every host sees it);
// otherwise only this host's catalog knows (the marker could not be written, or the metadata is
// unreadable). A later full verification that passes clears both.
struct DamageRecord {
  int64_t detected_at_micros = 0;
  std::string reason;
  std::string detected_by;  // "etcdadm 0.1.0 on host-a"
  bool in_store = false;
};
std::string damage_marker_json(const DamageRecord& d);
// Throws kCorrupt when unreadable.
DamageRecord parse_damage_marker(const std::string& json, const std::string& where);

// The result of the last `backup drill` of a backup: in the store (etcdadm-drill.json, every host
// sees it) and in the catalog, for `backup list` and the sidecar's metrics.
struct DrillRecord {
  int64_t drilled_at_micros = 0;
  bool passed = false;
  double rto_seconds = 0;            // fetch + restore + start until healthy + checks
  std::string message;               // the failure, or a note ("no HashKV recorded: ...")
  std::string drilled_by;            // "etcdadm 0.1.0 on host-a"
  std::string etcd_version;          // the etcd the backup was started on
  int64_t file_modified_micros = 0;  // etcdadm-drill.json's modification time when read (catalog only)
};
// The file's JSON: the record plus the drill's details (`details`: phases and checks, as
// `backup drill -o json` prints them), kept for whoever reads the store.
std::string drill_result_json(const DrillRecord& d, const std::string& details_json);
// Throws kCorrupt when unreadable.
DrillRecord parse_drill_result(const std::string& json, const std::string& where);

// What the catalog keeps per backup (merged from whichever metadata exists).
struct BackupRecord {
  std::string name;
  int64_t taken_at_micros = 0;  // 0 when unknown
  std::string format;           // "etcdadm" | "etcd-manager"
  std::string data_file;
  Compression compression = Compression::kGzip;
  std::string encryption = kEncryptionNone;
  std::vector<std::string> encrypted_to;  // as BackupMeta::encrypted_to
  bool encrypted() const { return encryption != kEncryptionNone; }
  // From the metadata only (the catalog does not keep it): readers of an encrypted backup read its
  // metadata again from the store, since rekey rewrites it in place.
  std::optional<RekeyInProgress> rekey;
  // Whether `sha256` is the data file's recorded digest (either one while a rekey is under way);
  // true when none is recorded.
  bool stored_sha256_matches(const std::string& sha256) const {
    return stored_sha256.empty() || sha256 == stored_sha256 || (rekey && sha256 == rekey->stored_sha256);
  }
  // The same for the data file's size (0 recorded: unknown, anything matches).
  bool stored_size_matches(uint64_t size) const {
    return stored_size == 0 || size == stored_size || (rekey && size == rekey->stored_size);
  }
  // Who can open the data file: encrypted_to, and the new recipients of a rekey under way.
  std::vector<std::string> recipients() const;
  uint64_t stored_size = 0;
  // The data file's modification time when the catalog read the metadata (0: unknown). A newer
  // one means the file was replaced (rekey) and the metadata must be read again.
  int64_t data_modified_micros = 0;
  std::optional<uint64_t> db_size;
  std::optional<int64_t> revision;
  bool revision_exact = false;
  std::string db_sha256;      // empty when unknown
  std::string stored_sha256;  // empty when unknown
  bool hash_trailer = true;
  std::string etcd_version;
  std::string cluster_id;
  std::string member_id;
  std::string source;
  std::optional<VerificationRecord> verification;  // from the catalog; none when never verified
  std::optional<DamageRecord> damage;              // known to be damaged (store marker or this catalog)
  std::optional<DrillRecord> drill;                // the last drill (store file); none when never drilled
  // From the metadata only (not kept by the catalog): reload_backup_record reads it.
  std::optional<SourceHashKv> source_hash;
};
// The format of a catalog row for a listed backup whose metadata cannot be read (it is damaged).
inline constexpr const char* kUnreadableFormat = "unreadable";
// That row: the listing's facts plus the damage, so `backup list` shows it and resolution names it.
BackupRecord unreadable_backup_record(const BackupListing& listing, const std::string& reason);
// Reads the metadata of one listed backup.
BackupRecord load_backup_record(BlobStore& store, const BackupListing& listing);
// `b` with its etcdadm metadata read again from the store (digests, recipients, a rekey under
// way); what the catalog alone knows (verification, damage) is kept.
BackupRecord reload_backup_record(BlobStore& store, const BackupRecord& b);
BackupRecord record_from_meta(const BackupMeta& meta);

}  // namespace etcdadm

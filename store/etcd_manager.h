// What etcd-manager (kops) reads from a shared store, as its source says (kubernetes-sigs/etcd-manager
// v3.0.20260707: pkg/backup, pkg/commands, pkg/etcd/restore.go, pkg/etcdversions), and the files it
// takes orders from:
//   <store>/control/etcd-cluster-spec          ClusterSpec: the cluster it should run
//   <store>/control/etcd-cluster-created       {"timestamp":<unix nanos>}: the cluster was created once
//   <store>/control/<RFC3339>-000000/_command.json
//                                              a Command; today only restoreBackup exists
// Each is protobuf JSON as its jsonpb/protojson writes it: lowerCamelCase names, int64 as a string,
// 2-space indent, no newline at the end, unset fields left out. (protojson at random adds a second
// space after some colons, fixed per binary, to stop byte comparisons; readers parse JSON, and the
// form written here is the one older etcd-manager releases wrote, which its tests pin.)
//
// Why it matters: etcd-manager's restore creates a new, empty cluster before it downloads the
// backup, so a backup it lists but cannot restore leaves kops users without their data. A backup
// gets _etcd_backup.meta only when etcd_manager_restore_blocker() finds nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/timefmt.h"
#include "store/blob_store.h"
#include "store/layout.h"

namespace etcdadm {

inline constexpr const char* kEtcdManagerControlDir = "control";
inline constexpr const char* kEtcdManagerClusterSpecKey = "control/etcd-cluster-spec";
inline constexpr const char* kEtcdManagerClusterCreatedKey = "control/etcd-cluster-created";
inline constexpr const char* kEtcdManagerCommandFile = "_command.json";
// The only data file etcd-manager downloads (pkg/backup: DataFilename).
inline constexpr const char* kEtcdManagerDataFile = "etcd.backup.gz";
// The release whose source the rules below were read from.
inline constexpr const char* kEtcdManagerReleaseRead = "etcd-manager v3.0.20260707";

// Why etcd-manager could not restore a backup with these properties, or nullopt when it could:
// it downloads only etcd.backup.gz (gzip, in the clear); it refuses a backup without an etcd
// version and restores only the families it ships a binary for (3.0 to 3.6: EtcdVersionForRestore),
// and it runs etcd's restore tool without --skip-hash-check, which needs the SHA-256 trailer.
std::optional<std::string> etcd_manager_restore_blocker(const std::string& data_file, bool encrypted, bool hash_trailer,
                                                        const std::string& etcd_version);
// The same for a catalogued backup (its data file name, encryption, trailer, etcd version).
std::optional<std::string> etcd_manager_restore_blocker(const BackupRecord& backup);

struct EtcdManagerClusterSpec {
  int member_count = 0;
  std::string etcd_version;
  bool operator==(const EtcdManagerClusterSpec&) const = default;
};

// ---- a backup's _etcd_backup.meta: BackupInfo {etcd_version = 1; timestamp = 2 (unix seconds);
// ClusterSpec cluster_spec = 3}, nothing else (etcd-manager's parser rejects unknown fields) ----
std::string etcd_manager_meta_json(const std::string& etcd_version, int64_t unix_seconds, int member_count);
struct EtcdManagerMeta {
  std::string etcd_version;          // the cluster spec's when the top-level field is empty
  std::optional<int64_t> timestamp;  // unix seconds
  int member_count = 0;
};
EtcdManagerMeta parse_etcd_manager_meta(const std::string& json, const std::string& where);

// ---- control files ----
struct EtcdManagerRestoreCommand {
  EtcdManagerClusterSpec cluster_spec;  // the cluster to restore into
  std::string backup;                   // a backup name of this store
};
struct EtcdManagerCommand {
  int64_t timestamp_nanos = 0;  // orders the queue
  std::optional<EtcdManagerRestoreCommand> restore_backup;
  std::string key;  // where it was read from ("control/<dir>/_command.json"); empty for a new one
};

std::string etcd_manager_cluster_spec_json(const EtcdManagerClusterSpec& spec);
std::string etcd_manager_command_json(const EtcdManagerCommand& command);
// etcd-manager writes this one with Go's encoding/json: {"timestamp":1795581998310500426}.
std::string etcd_manager_cluster_created_json(int64_t unix_nanos);
// "2026-11-25T04:46:38Z-000000": the directory of a command added at `t` (etcd-manager-ctl always
// writes the sequence 000000).
std::string etcd_manager_command_dir(SystemTime t);

// Parsers (of these and of _etcd_backup.meta) accept what protojson accepts for these messages: lowerCamelCase or the
// proto field names (member_count), numbers as JSON numbers or strings, null for unset. Unknown fields are ignored (a
// newer etcd-manager may add some). Throw kCorrupt naming `where`.
EtcdManagerClusterSpec parse_etcd_manager_cluster_spec(const std::string& json, const std::string& where);
EtcdManagerCommand parse_etcd_manager_command(const std::string& json, const std::string& where);
// The timestamp of etcd-cluster-created (unix nanos; 0 when it has none).
int64_t parse_etcd_manager_cluster_created(const std::string& json, const std::string& where);

// ---- the control store, on any BlobStore rooted where the backups are ----
std::optional<EtcdManagerClusterSpec> read_etcd_manager_cluster_spec(BlobStore& store);
void write_etcd_manager_cluster_spec(BlobStore& store, const EtcdManagerClusterSpec& spec);
// configure-cluster: the store's spec with the fields set in `changes` replaced, written back and
// returned. A store without a spec needs both fields (kInvalidArgument): etcd-manager-ctl falls
// back to 1 member of etcd 3.2.24, never what a cluster today runs.
EtcdManagerClusterSpec configure_etcd_manager_cluster(BlobStore& store, const EtcdManagerClusterSpec& changes);
// The timestamp of etcd-cluster-created, nullopt when the file is absent.
std::optional<int64_t> read_etcd_manager_cluster_created(BlobStore& store);
// Every command under control/, oldest first (by timestamp, as etcd-manager orders them).
std::vector<EtcdManagerCommand> list_etcd_manager_commands(BlobStore& store);
// Writes `command` (timestamp set to `now`) into a new command directory, never over another
// command: a second command within the same second is refused (kAlreadyExists). Returns its key.
std::string add_etcd_manager_command(BlobStore& store, EtcdManagerCommand command, SystemTime now);
void remove_etcd_manager_command(BlobStore& store, const EtcdManagerCommand& command);
// delete-command: removes the commands restoring backup `what` (as etcd-manager-ctl does) or
// stored at key `what`; returns their keys. kNotFound when none matches.
std::vector<std::string> remove_etcd_manager_commands(BlobStore& store, const std::string& what);

// ---- backups etcd-manager lists today ----
struct EtcdManagerListing {
  std::string name;
  std::optional<std::string> blocker;  // why its restore would fail (after wiping the cluster)
  bool etcdadm_metadata = false;       // etcdadm-backup.json is there: etcdadm lists it without the etcd-manager file
};
// What etcd-manager would make of one backup of a listing; nullopt when it does not list it (no
// _etcd_backup.meta). Reads that backup's metadata only.
std::optional<EtcdManagerListing> etcd_manager_listing(BlobStore& store, const BackupListing& backup);
// The backups holding _etcd_backup.meta, each with what etcd-manager would make of it.
std::vector<EtcdManagerListing> etcd_manager_listings(BlobStore& store);
// Takes a backup etcd-manager cannot restore off its list by deleting its _etcd_backup.meta; the
// backup stays complete for etcdadm through its etcdadm-backup.json, so the store marker moves to
// layout 3 first (older etcdadm refuses the store rather than take the backup for a leftover).
// Refused (kInvalidArgument) for a backup without etcdadm-backup.json, which would vanish.
void hide_from_etcd_manager(BlobStore& store, const EtcdManagerListing& backup);

// What `etcdadm etcd-manager check` reports: each backup etcd-manager lists but could not restore,
// and each queued restore of a backup it could not restore. With `fix`, backups that have
// etcdadm metadata are taken off etcd-manager's list (hide_from_etcd_manager); the rest need a
// person (a backup only etcd-manager's file describes; a queued command).
struct EtcdManagerFinding {
  std::string name;  // the backup
  std::string reason;
  std::string command_key;  // set for a queued command
  bool hidden = false;      // taken off etcd-manager's list by this run
};
std::vector<EtcdManagerFinding> check_etcd_manager_store(BlobStore& store, bool fix);

}  // namespace etcdadm

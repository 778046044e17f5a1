// The SQLite catalog: a local index of what each backup store holds, so that `backup list` and
// name resolution are fast on stores with thousands of backups. It is never the truth: sync()
// reconciles it with the store (reading metadata only of backups it has not seen), and rebuild()
// recreates it from scratch. A sync lists the whole store only when the last full listing is older
// than full_sync_interval() (or when asked); in between it lists only the backups named after the
// newest it knows, less an hour (docs/store-format.md §9 says why that is safe). Losing the file
// loses the attempt history of this host, the results of `backup verify` (revision and key counts
// read from each snapshot), and this host's audience pins (store/audience.h: the next write pins
// again, as on first use).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "store/blob_store.h"
#include "store/layout.h"

struct sqlite3;

namespace etcdadm {

struct SyncStats {
  int added = 0;
  int removed = 0;
  int unchanged = 0;
  int unreadable = 0;  // listed backups whose metadata could not be read (skipped, warned)
  bool full = false;   // the whole store was listed (else only the newest backups' names)
};

enum class SyncDepth {
  kAuto,  // full when due (full_sync_interval), else incremental
  kFull,  // list the whole store: backups deleted or marked damaged elsewhere are seen
};

// One backup attempt made from this host (save command or sidecar tick).
struct AttemptRecord {
  int64_t started_micros = 0;
  int64_t finished_micros = 0;
  std::string result;  // "success" | "failure"
  std::string reason;  // error kind on failure ("unavailable", "auth", ...)
  std::string message;
  std::string backup_name;  // the backup written, on success
  // Who tried: "save" (backup save / import run by hand or from cron), "sidecar" (a sidecar tick
  // or trigger); "" for attempts recorded before catalog v4. A sidecar's metrics count only its own.
  std::string origin;
};

// Who this host lets read what it writes into a store: the key ID of the store's age recipients
// (StoreEncryption::key_id; "" for a store in the clear) the first time it wrote there, or as a
// `backup rekey` or `backup pin` on this host last set it (store/audience.h).
struct AudiencePin {
  std::string key_id;
  std::vector<std::string> labels;  // StoreEncryption::recipient_labels(); empty in the clear
  int64_t pinned_at_micros = 0;
  std::string pinned_by;  // the command that set it: "first write", "backup rekey", ...
};

class Catalog;

// After a command changed a store (prune, rekey): catalog->sync(store, depth), only logged when it
// fails (`after` names the command): the store is the truth, and the next sync catches up.
void sync_after(Catalog* catalog, BlobStore& store, const char* after, SyncDepth depth = SyncDepth::kAuto);

class Catalog {
 public:
  // root: /var/cache/etcdadm/catalog.db; others: $XDG_CACHE_HOME/etcdadm/catalog.db or
  // ~/.cache/etcdadm/catalog.db. ETCDADM_CATALOG overrides both.
  static std::string default_path();

  // Opens (creating) the catalog at `path`; ":memory:" is a throw-away catalog.
  explicit Catalog(const std::string& path);
  // Opens `path`, or falls back to an in-memory catalog with a warning when it cannot be opened
  // (read-only home, full disk): listing a store must never fail because of the index.
  static Catalog open_or_memory(const std::string& path);
  ~Catalog();
  Catalog(Catalog&& other) noexcept;
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

  SyncStats sync(BlobStore& store, SyncDepth depth = SyncDepth::kAuto);
  // How old the last full listing of a store may get before a sync lists it all again:
  // ETCDADM_CATALOG_FULL_SYNC (a duration: 30m, 1h; 0 lists in full every time), default 1 h.
  static std::chrono::seconds full_sync_interval();
  // Stores of fewer backups than this are listed in full at every sync: a few listing requests,
  // and whatever appears (an old backup copied in) is seen at once. Default 1,000; tests lower it.
  void set_incremental_from(int64_t backups) { incremental_from_ = backups; }
  SyncStats rebuild(BlobStore& store);
  // Records a backup just written (so the next list needs no metadata read).
  void record(const std::string& store_url, const BackupRecord& r);
  // Drops backups this process deleted (prune), which an incremental sync would not notice.
  void forget(const std::string& store_url, const std::vector<std::string>& names);
  // Caches the result of a structural verification of `r` (indexing `r` first when the catalog
  // does not know it). Kept by sync() while the backup's data file is unchanged; lost when the
  // backup is re-read (its data file changed size), removed, or the catalog rebuilt.
  void record_verification(const std::string& store_url, const BackupRecord& r, const VerificationRecord& v);
  // Records that `r` was found damaged (indexing it first when unknown), or that a verification
  // passed again (clear). Kept by sync() until the store's damage marker says otherwise.
  void record_damage(const std::string& store_url, const BackupRecord& r, const DamageRecord& d);
  void clear_damage(const std::string& store_url, const std::string& name);
  // Records the result of a drill of `r` (indexing it first when unknown). Replaced by the store's
  // etcdadm-drill.json when a sync sees that file change.
  void record_drill(const std::string& store_url, const BackupRecord& r, const DrillRecord& d);
  // Newest first (by time taken, then name).
  std::vector<BackupRecord> backups(const std::string& store_url);
  // The attempt history (kept across restarts; lost only with the catalog file).
  void record_attempt(const std::string& store_url, const AttemptRecord& attempt);
  // Newest first; `origin` non-empty keeps only that origin's attempts.
  std::vector<AttemptRecord> attempts(const std::string& store_url, int limit = 100, const std::string& origin = "");
  // The store's pin on this host, if any; pin_audience sets (replaces) it.
  std::optional<AudiencePin> audience_pin(const std::string& store_url);
  void pin_audience(const std::string& store_url, const AudiencePin& pin);
  const std::string& path() const { return path_; }

 private:
  void exec(const std::string& sql);
  void migrate(int64_t from_version);
  int64_t store_id(const std::string& store_url);
  void insert(int64_t store_id, const BackupRecord& r);
  // Existing stores' IDs without a write: a warm `backup list` takes no write lock.
  std::optional<int64_t> find_store_id(const std::string& store_url);
  std::string path_;
  sqlite3* db_ = nullptr;
  int64_t incremental_from_ = 1000;
};

}  // namespace etcdadm

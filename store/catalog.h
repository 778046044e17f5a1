// The SQLite catalog: a local index of what each backup store holds, so that `backup list` and
// name resolution are fast on stores with thousands of backups. It is never the truth: sync()
// reconciles it with the store (reading metadata only of backups it has not seen), and rebuild()
// recreates it from scratch. Losing the file loses nothing but caches: the attempt history of this
// host and the results of `backup verify` (revision and key counts read from each snapshot).
#pragma once

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

class Catalog;

// After a command changed a store (prune, rekey): catalog->sync(store), only logged when it fails
// (`after` names the command): the store is the truth, and the next sync catches up.
void sync_after(Catalog* catalog, BlobStore& store, const char* after);

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

  SyncStats sync(BlobStore& store);
  SyncStats rebuild(BlobStore& store);
  // Records a backup just written (so the next list needs no metadata read).
  void record(const std::string& store_url, const BackupRecord& r);
  // Caches the result of a structural verification of `r` (indexing `r` first when the catalog
  // does not know it). Kept by sync() while the backup's data file is unchanged; lost when the
  // backup is re-read (its data file changed size), removed, or the catalog rebuilt.
  void record_verification(const std::string& store_url, const BackupRecord& r, const VerificationRecord& v);
  // Records that `r` was found damaged (indexing it first when unknown), or that a verification
  // passed again (clear). Kept by sync() until the store's damage marker says otherwise.
  void record_damage(const std::string& store_url, const BackupRecord& r, const DamageRecord& d);
  void clear_damage(const std::string& store_url, const std::string& name);
  // Newest first (by time taken, then name).
  std::vector<BackupRecord> backups(const std::string& store_url);
  // The attempt history (kept across restarts; lost only with the catalog file).
  void record_attempt(const std::string& store_url, const AttemptRecord& attempt);
  // Newest first; `origin` non-empty keeps only that origin's attempts.
  std::vector<AttemptRecord> attempts(const std::string& store_url, int limit = 100, const std::string& origin = "");
  const std::string& path() const { return path_; }

 private:
  void exec(const std::string& sql);
  void migrate(int64_t from_version);
  int64_t store_id(const std::string& store_url);
  void insert(int64_t store_id, const BackupRecord& r);
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace etcdadm

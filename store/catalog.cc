#include "store/catalog.h"

#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

#include "common/error.h"
#include "common/fs.h"
#include "common/parallel.h"
#include "common/timefmt.h"

namespace etcdadm {

namespace {

// 1: backups; 2: + attempts (recreated); 3: + the verification columns of backups (migrated from 2
// in place, keeping rows and attempt history); 4: + attempts.origin (migrated in place; attempts
// recorded before it have origin '' and count for no one's metrics) + the damage columns of backups;
// 5: + the encryption columns of backups (migrated in place: rows from before are unencrypted);
// 6: + the drill columns of backups (migrated in place: no drill known); 7: + audience_pins (created
// where missing; never dropped, since it is no cache: see Catalog::audience_pin).
constexpr int kSchemaVersion = 7;

// Who this host lets read what it writes into each store (Catalog::audience_pin). Created with IF
// NOT EXISTS and left alone by the start-over below: an etcdadm from before v7 that starts the
// catalog over keeps the table, and the pins in it stay in force when this one opens it again.
constexpr const char* kCreateAudiencePins =
    "CREATE TABLE IF NOT EXISTS audience_pins (url TEXT PRIMARY KEY, key_id TEXT NOT NULL, labels TEXT NOT NULL,"
    " pinned_at_micros INTEGER NOT NULL, pinned_by TEXT NOT NULL)";

// Columns of the last `backup verify` (all NULL when never verified). A cache: not in the store.
constexpr const char* kVerificationColumns[] = {"verified_revision INTEGER", "verified_total_key INTEGER",
                                                "verified_live_keys INTEGER", "verified_hash INTEGER",
                                                "verified_at_micros INTEGER"};
// Known damage (damage_reason NULL: none known). damage_in_store: the store has the marker.
constexpr const char* kDamageColumns[] = {"damaged_at_micros INTEGER", "damage_reason TEXT", "damage_by TEXT",
                                          "damage_in_store INTEGER"};
// "none" | "age", the recipients one per line, and the data file's modification time when the
// metadata was read (0: unknown), which tells a rekeyed backup from one the catalog knows.
constexpr const char* kEncryptionColumns[] = {"encryption TEXT NOT NULL DEFAULT 'none'",
                                              "encrypted_to TEXT NOT NULL DEFAULT ''",
                                              "data_modified_micros INTEGER NOT NULL DEFAULT 0"};

// The last `backup drill` (drill_passed NULL: never drilled), from etcdadm-drill.json or from the
// drill this host just ran; drill_file_micros: that file's modification time when read (0: the row
// was written by the drill itself, and the next sync reads the file once).
constexpr const char* kDrillColumns[] = {"drilled_at_micros INTEGER",
                                         "drill_passed INTEGER",
                                         "drill_rto_seconds REAL",
                                         "drill_message TEXT",
                                         "drill_by TEXT",
                                         "drill_etcd_version TEXT",
                                         "drill_file_micros INTEGER NOT NULL DEFAULT 0"};

std::string join_lines(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : "\n") + s;
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    out.push_back(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

// RAII prepared statement with typed binders.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK) {
      throw Error(ErrorKind::kIo, std::string("catalog: cannot prepare statement: ") + sqlite3_errmsg(db));
    }
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(st_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(st_, i, v);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(st_, i, v);
    return *this;
  }
  Stmt& bind_null(int i) {
    sqlite3_bind_null(st_, i);
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(ErrorKind::kIo, std::string("catalog: ") + sqlite3_errmsg(db_));
  }
  int64_t i64(int col) { return sqlite3_column_int64(st_, col); }
  double real(int col) { return sqlite3_column_double(st_, col); }
  bool is_null(int col) { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
  std::string text(int col) {
    auto* p = sqlite3_column_text(st_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

}  // namespace

std::string Catalog::default_path() {
  if (const char* p = std::getenv("ETCDADM_CATALOG"); p != nullptr && *p != 0) return p;
  return user_cache_dir() + "/catalog.db";
}

Catalog::Catalog(const std::string& path) : path_(path) {
  if (path != ":memory:") {
    check_cache_dir(parent_dir(path));
    make_dirs(parent_dir(path), 0700);
  }
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(ErrorKind::kIo, "cannot open catalog " + path + ": " + msg, "pass --catalog with a writable path");
  }
  // Several etcdadm processes (sidecar, cron, an operator) may use one catalog at once.
  sqlite3_busy_timeout(db_, 10000);
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=NORMAL");
  auto user_version = [this] {
    // Finalized before the schema changes below: SQLite refuses DROP TABLE while a statement of
    // the same connection is still active ("database table is locked").
    Stmt v(db_, "PRAGMA user_version");
    v.step();
    return v.i64(0);
  };
  if (user_version() == kSchemaVersion) return;
  // Another process may be upgrading the same file: decide again under the write lock.
  exec("BEGIN IMMEDIATE");
  try {
    migrate(user_version());
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

void Catalog::migrate(int64_t version) {
  if (version == kSchemaVersion) return;
  if (version >= 2 && version <= 6) {
    // v2 -> v3: add the verification cache; v3 -> v4: who made each attempt; v4 -> v5: encryption;
    // v5 -> v6: drills; v6 -> v7: audience pins. Rows and attempt history stay.
    if (version == 2) {
      for (const char* column : kVerificationColumns) exec(std::string("ALTER TABLE backups ADD COLUMN ") + column);
    }
    if (version <= 3) {
      for (const char* column : kDamageColumns) exec(std::string("ALTER TABLE backups ADD COLUMN ") + column);
      exec("ALTER TABLE attempts ADD COLUMN origin TEXT NOT NULL DEFAULT ''");
    }
    if (version <= 4) {
      for (const char* column : kEncryptionColumns) exec(std::string("ALTER TABLE backups ADD COLUMN ") + column);
    }
    if (version <= 5) {
      for (const char* column : kDrillColumns) exec(std::string("ALTER TABLE backups ADD COLUMN ") + column);
    }
    exec(kCreateAudiencePins);
    exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
    return;
  }
  // The catalog is only an index: on any other schema, start over (sync() refills it).
  exec("DROP TABLE IF EXISTS attempts");
  exec("DROP TABLE IF EXISTS backups");
  exec("DROP TABLE IF EXISTS stores");
  exec("CREATE TABLE stores (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, last_sync_micros INTEGER)");
  std::string verification_columns;
  for (const char* column : kVerificationColumns) verification_columns += std::string(" ") + column + ",";
  for (const char* column : kDamageColumns) verification_columns += std::string(" ") + column + ",";
  for (const char* column : kEncryptionColumns) verification_columns += std::string(" ") + column + ",";
  for (const char* column : kDrillColumns) verification_columns += std::string(" ") + column + ",";
  exec(
      "CREATE TABLE backups ("
      " store_id INTEGER NOT NULL REFERENCES stores(id),"
      " name TEXT NOT NULL,"
      " taken_at_micros INTEGER NOT NULL,"
      " format TEXT NOT NULL,"
      " source TEXT NOT NULL,"
      " data_file TEXT NOT NULL,"
      " compression TEXT NOT NULL,"
      " stored_size INTEGER NOT NULL,"
      " db_size INTEGER,"
      " revision INTEGER,"
      " revision_exact INTEGER NOT NULL,"
      " db_sha256 TEXT NOT NULL,"
      " stored_sha256 TEXT NOT NULL,"
      " hash_trailer INTEGER NOT NULL,"
      " etcd_version TEXT NOT NULL,"
      " cluster_id TEXT NOT NULL,"
      " member_id TEXT NOT NULL," +
      verification_columns + " PRIMARY KEY (store_id, name))");
  exec("CREATE INDEX backups_by_time ON backups(store_id, taken_at_micros)");
  // Unlike `backups`, the attempt history is not in the store: it is what this host tried.
  exec(
      "CREATE TABLE attempts ("
      " id INTEGER PRIMARY KEY,"
      " store_id INTEGER NOT NULL REFERENCES stores(id),"
      " started_micros INTEGER NOT NULL,"
      " finished_micros INTEGER NOT NULL,"
      " result TEXT NOT NULL,"
      " reason TEXT NOT NULL,"
      " message TEXT NOT NULL,"
      " backup_name TEXT NOT NULL,"
      " origin TEXT NOT NULL DEFAULT '')");
  exec("CREATE INDEX attempts_by_time ON attempts(store_id, started_micros)");
  exec(kCreateAudiencePins);
  exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
}

void sync_after(Catalog* catalog, BlobStore& store, const char* after, SyncDepth depth) {
  if (catalog == nullptr) return;
  try {
    catalog->sync(store, depth);
  } catch (const Error& e) {
    spdlog::warn("catalog not updated after {}: {}", after, e.what());
  }
}

Catalog Catalog::open_or_memory(const std::string& path) {
  try {
    return Catalog(path);
  } catch (const Error& e) {
    spdlog::warn("{}; using a temporary in-memory catalog (listing reads every backup's metadata)", e.what());
    return Catalog(":memory:");
  }
}

Catalog::Catalog(Catalog&& other) noexcept
    : path_(std::move(other.path_)), db_(other.db_), incremental_from_(other.incremental_from_) {
  other.db_ = nullptr;
}

Catalog::~Catalog() {
  if (db_ != nullptr) sqlite3_close(db_);
}

void Catalog::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw Error(ErrorKind::kIo, "catalog " + path_ + ": " + msg);
  }
}

int64_t Catalog::store_id(const std::string& url) {
  if (auto id = find_store_id(url)) return *id;
  Stmt ins(db_, "INSERT OR IGNORE INTO stores(url) VALUES (?)");
  ins.bind(1, url).step();
  Stmt sel(db_, "SELECT id FROM stores WHERE url = ?");
  sel.bind(1, url);
  if (!sel.step()) throw Error(ErrorKind::kInternal, "catalog: store row vanished");
  return sel.i64(0);
}

void Catalog::insert(int64_t sid, const BackupRecord& r) {
  Stmt st(db_,
          "INSERT OR REPLACE INTO backups (store_id, name, taken_at_micros, format, source, data_file, compression,"
          " stored_size, db_size, revision, revision_exact, db_sha256, stored_sha256, hash_trailer, etcd_version,"
          " cluster_id, member_id, damaged_at_micros, damage_reason, damage_by, damage_in_store, encryption,"
          " encrypted_to, data_modified_micros, drilled_at_micros, drill_passed, drill_rto_seconds, drill_message,"
          " drill_by, drill_etcd_version, drill_file_micros)"
          " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st.bind(1, sid).bind(2, r.name).bind(3, r.taken_at_micros).bind(4, r.format).bind(5, r.source);
  st.bind(6, r.data_file)
      .bind(7, std::string(compression_name(r.compression)))
      .bind(8, static_cast<int64_t>(r.stored_size));
  if (r.db_size)
    st.bind(9, static_cast<int64_t>(*r.db_size));
  else
    st.bind_null(9);
  if (r.revision)
    st.bind(10, *r.revision);
  else
    st.bind_null(10);
  st.bind(11, int64_t{r.revision_exact}).bind(12, r.db_sha256).bind(13, r.stored_sha256);
  st.bind(14, int64_t{r.hash_trailer}).bind(15, r.etcd_version).bind(16, r.cluster_id).bind(17, r.member_id);
  if (r.damage) {
    st.bind(18, r.damage->detected_at_micros).bind(19, r.damage->reason).bind(20, r.damage->detected_by);
    st.bind(21, int64_t{r.damage->in_store});
  } else {
    st.bind_null(18).bind_null(19).bind_null(20).bind_null(21);
  }
  st.bind(22, r.encryption).bind(23, join_lines(r.encrypted_to)).bind(24, r.data_modified_micros);
  if (r.drill) {
    st.bind(25, r.drill->drilled_at_micros).bind(26, int64_t{r.drill->passed}).bind(27, r.drill->rto_seconds);
    st.bind(28, r.drill->message).bind(29, r.drill->drilled_by).bind(30, r.drill->etcd_version);
    st.bind(31, r.drill->file_modified_micros);
  } else {
    st.bind_null(25).bind_null(26).bind_null(27).bind_null(28).bind_null(29).bind_null(30).bind(31, int64_t{0});
  }
  st.step();
}

void Catalog::record(const std::string& store_url, const BackupRecord& r) { insert(store_id(store_url), r); }

void Catalog::forget(const std::string& store_url, const std::vector<std::string>& names) {
  auto sid = find_store_id(store_url);
  if (!sid || names.empty()) return;
  exec("BEGIN IMMEDIATE");
  try {
    for (const auto& name : names) {
      Stmt del(db_, "DELETE FROM backups WHERE store_id = ? AND name = ?");
      del.bind(1, *sid).bind(2, name).step();
    }
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

void Catalog::record_verification(const std::string& store_url, const BackupRecord& r, const VerificationRecord& v) {
  int64_t sid = store_id(store_url);
  auto update = [&] {
    Stmt upd(
        db_,
        "UPDATE backups SET verified_revision = ?, verified_total_key = ?, verified_live_keys = ?, verified_hash = ?,"
        " verified_at_micros = ? WHERE store_id = ? AND name = ?");
    upd.bind(1, v.revision).bind(2, v.total_key).bind(3, static_cast<int64_t>(v.live_keys));
    upd.bind(4, static_cast<int64_t>(v.hash)).bind(5, v.verified_at_micros).bind(6, sid).bind(7, r.name).step();
    return sqlite3_changes(db_) > 0;
  };
  if (update()) return;
  // Not indexed yet (a catalog synced by nobody): index the backup, then record.
  insert(sid, r);
  update();
}

std::chrono::seconds Catalog::full_sync_interval() {
  const char* v = std::getenv("ETCDADM_CATALOG_FULL_SYNC");
  if (v == nullptr || *v == 0) return std::chrono::hours(1);
  if (std::string(v) == "0") return std::chrono::seconds(0);
  auto d = parse_duration(v);
  if (!d) {
    throw Error(ErrorKind::kInvalidArgument, std::string("ETCDADM_CATALOG_FULL_SYNC=") + v + " is not a duration",
                "give it as 30m, 1h or 0 (a full listing every time)");
  }
  return std::chrono::duration_cast<std::chrono::seconds>(*d);
}

namespace {

// An incremental sync lists the backups named after the newest one the catalog knows, less this:
// a backup's name is the time its save started on the host that wrote it, so one that finished
// after the newest known (a long upload) or came from a host whose clock is behind may be named a
// little earlier. What lies beyond it is found by the next full listing.
constexpr std::chrono::hours kIncrementalOverlap{1};

// The metadata of backups the catalog has not seen, read kMetadataReaders at a time: on an object
// store each is a round trip, and a cold listing of 10,000 backups is 10,000 of them (every store
// client is thread-safe).
constexpr size_t kMetadataReaders = 8;

std::vector<BackupRecord> read_records(BlobStore& store, const std::vector<const BackupListing*>& listings,
                                       SyncStats& stats) {
  std::vector<std::optional<BackupRecord>> read(listings.size());
  std::vector<std::string> errors(listings.size());
  for_each_index_in_parallel(listings.size(), std::min(kMetadataReaders, (listings.size() + 15) / 16), [&](size_t i) {
    try {
      read[i] = load_backup_record(store, *listings[i]);
    } catch (const Error& e) {
      errors[i] = e.what();  // listed as damaged below; anything else stops the sync
    }
  });
  std::vector<BackupRecord> out;
  for (size_t i = 0; i < listings.size(); ++i) {
    if (read[i]) {
      out.push_back(std::move(*read[i]));
      ++stats.added;
    } else {
      ++stats.unreadable;
      spdlog::warn("backup {} in {} is damaged: {}", listings[i]->name, store.url(), errors[i]);
      // Listed as damaged (never silently absent): `latest` skips it and names it.
      out.push_back(unreadable_backup_record(*listings[i], errors[i]));
    }
  }
  return out;
}

}  // namespace

std::optional<int64_t> Catalog::find_store_id(const std::string& url) {
  Stmt sel(db_, "SELECT id FROM stores WHERE url = ?");
  sel.bind(1, url);
  if (!sel.step()) return std::nullopt;
  return sel.i64(0);
}

SyncStats Catalog::sync(BlobStore& store, SyncDepth depth) {
  SyncStats stats;
  const int64_t now = to_unix_micros(std::chrono::system_clock::now());
  std::optional<int64_t> sid = find_store_id(store.url());

  // Incremental when a full listing is recent and the catalog knows a backup to start after.
  std::string after;
  if (depth == SyncDepth::kAuto && sid) {
    Stmt sel(db_,
             "SELECT COALESCE(s.last_sync_micros, 0), (SELECT MAX(taken_at_micros) FROM backups WHERE store_id = s.id),"
             " (SELECT COUNT(*) FROM backups WHERE store_id = s.id) FROM stores s WHERE s.id = ?");
    sel.bind(1, *sid);
    if (sel.step() && !sel.is_null(1) && sel.i64(2) >= incremental_from_) {
      const int64_t last_full = sel.i64(0);
      const int64_t interval = std::chrono::duration_cast<std::chrono::microseconds>(full_sync_interval()).count();
      if (last_full > 0 && now - last_full < interval && last_full <= now) {
        // A backup dated in the future (a writer whose clock is ahead) must not hide the ones
        // written meanwhile: the range never starts later than an hour before now.
        const int64_t newest = std::min(sel.i64(1), now);
        after = make_backup_name(from_unix_micros(
            newest - std::chrono::duration_cast<std::chrono::microseconds>(kIncrementalOverlap).count()));
      }
    }
  }
  stats.full = after.empty();
  std::vector<BackupListing> listed = stats.full ? scan_backups(store) : scan_backups_after(store, after);
  if (!sid) sid = store_id(store.url());

  struct Known {
    int64_t stored_size;
    bool marked_in_store;  // the row reflects a damage marker in the store
    int64_t data_modified_micros;
    int64_t drill_file_micros;  // the drill result file the row reflects (0: none read)
  };
  std::map<std::string, Known> known;  // the rows the listing speaks for: all, or those named after `after`
  {
    Stmt sel(db_,
             stats.full
                 ? "SELECT name, stored_size, COALESCE(damage_in_store, 0), data_modified_micros,"
                   " drill_file_micros FROM backups WHERE store_id = ?"
                 : "SELECT name, stored_size, COALESCE(damage_in_store, 0), data_modified_micros,"
                   " drill_file_micros FROM backups"
                   " WHERE store_id = ? AND name >= ? AND name < ?");  // a directory named `after` has keys after it
    sel.bind(1, *sid);
    if (!stats.full) sel.bind(2, after).bind(3, std::string(kBackupNamesEnd));
    while (sel.step()) known[sel.text(0)] = Known{sel.i64(1), sel.i64(2) != 0, sel.i64(3), sel.i64(4)};
  }

  // Decide first, read metadata next, write last: no write lock is held across the store's
  // requests, and a sync that finds nothing new writes nothing.
  std::vector<const BackupListing*> to_read;
  std::vector<std::pair<std::string, int64_t>> learned_times;
  for (const auto& l : listed) {
    auto it = known.find(l.name);
    // A known backup whose data file changed size or modification time was replaced behind our
    // back (a rekey): re-read it. So is one whose damage marker appeared (another host found it
    // damaged) or went (re-verified), or whose drill result changed (a drill anywhere). A row
    // without a time (recorded by a save) learns it here.
    if (it != known.end() && (l.data_key.empty() || static_cast<uint64_t>(it->second.stored_size) == l.data_size) &&
        it->second.marked_in_store == l.has_damage_marker && it->second.drill_file_micros == l.drill_modified_micros) {
      int64_t known_time = it->second.data_modified_micros;
      if (known_time == 0 || l.data_modified_micros == 0 || known_time == l.data_modified_micros) {
        if (known_time == 0 && l.data_modified_micros != 0) learned_times.emplace_back(l.name, l.data_modified_micros);
        ++stats.unchanged;
        known.erase(it);
        continue;
      }
    }
    if (it != known.end()) known.erase(it);
    to_read.push_back(&l);
  }
  // Whatever is left in `known` lies in the listed range and is no longer in the store.
  std::vector<BackupRecord> records = read_records(store, to_read, stats);
  if (records.empty() && known.empty() && learned_times.empty() && !stats.full) return stats;

  exec("BEGIN IMMEDIATE");
  try {
    for (const auto& r : records) insert(*sid, r);
    for (const auto& [name, time] : learned_times) {
      Stmt upd(db_, "UPDATE backups SET data_modified_micros = ? WHERE store_id = ? AND name = ?");
      upd.bind(1, time).bind(2, *sid).bind(3, name).step();
    }
    for (const auto& [name, row] : known) {
      Stmt del(db_, "DELETE FROM backups WHERE store_id = ? AND name = ?");
      del.bind(1, *sid).bind(2, name).step();
      ++stats.removed;
    }
    if (stats.full) {
      // The time of the last full listing: what decides when the next one is due.
      Stmt upd(db_, "UPDATE stores SET last_sync_micros = ? WHERE id = ?");
      upd.bind(1, now).bind(2, *sid).step();
    }
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
  return stats;
}

SyncStats Catalog::rebuild(BlobStore& store) {
  int64_t sid = store_id(store.url());
  Stmt del(db_, "DELETE FROM backups WHERE store_id = ?");
  del.bind(1, sid).step();
  return sync(store, SyncDepth::kFull);
}

void Catalog::record_damage(const std::string& store_url, const BackupRecord& r, const DamageRecord& d) {
  int64_t sid = store_id(store_url);
  Stmt upd(db_,
           "UPDATE backups SET damaged_at_micros = ?, damage_reason = ?, damage_by = ?, damage_in_store = ?"
           " WHERE store_id = ? AND name = ?");
  upd.bind(1, d.detected_at_micros).bind(2, d.reason).bind(3, d.detected_by).bind(4, int64_t{d.in_store});
  upd.bind(5, sid).bind(6, r.name).step();
  if (sqlite3_changes(db_) > 0) return;
  BackupRecord with = r;
  with.damage = d;
  insert(sid, with);
}

void Catalog::clear_damage(const std::string& store_url, const std::string& name) {
  Stmt upd(db_,
           "UPDATE backups SET damaged_at_micros = NULL, damage_reason = NULL, damage_by = NULL, damage_in_store = NULL"
           " WHERE store_id = (SELECT id FROM stores WHERE url = ?) AND name = ?");
  upd.bind(1, store_url).bind(2, name).step();
}

void Catalog::record_drill(const std::string& store_url, const BackupRecord& r, const DrillRecord& d) {
  int64_t sid = store_id(store_url);
  Stmt upd(db_,
           "UPDATE backups SET drilled_at_micros = ?, drill_passed = ?, drill_rto_seconds = ?, drill_message = ?,"
           " drill_by = ?, drill_etcd_version = ?, drill_file_micros = ? WHERE store_id = ? AND name = ?");
  upd.bind(1, d.drilled_at_micros).bind(2, int64_t{d.passed}).bind(3, d.rto_seconds).bind(4, d.message);
  upd.bind(5, d.drilled_by).bind(6, d.etcd_version).bind(7, d.file_modified_micros).bind(8, sid).bind(9, r.name).step();
  if (sqlite3_changes(db_) > 0) return;
  BackupRecord with = r;
  with.drill = d;
  insert(sid, with);
}

std::vector<BackupRecord> Catalog::backups(const std::string& store_url) {
  std::vector<BackupRecord> out;
  Stmt sel(db_,
           "SELECT b.name, b.taken_at_micros, b.format, b.source, b.data_file, b.compression, b.stored_size, b.db_size,"
           " b.revision, b.revision_exact, b.db_sha256, b.stored_sha256, b.hash_trailer, b.etcd_version, b.cluster_id,"
           " b.member_id, b.verified_revision, b.verified_total_key, b.verified_live_keys, b.verified_hash,"
           " b.verified_at_micros, b.damaged_at_micros, b.damage_reason, b.damage_by, b.damage_in_store,"
           " b.encryption, b.encrypted_to, b.drilled_at_micros, b.drill_passed, b.drill_rto_seconds, b.drill_message,"
           " b.drill_by, b.drill_etcd_version, b.drill_file_micros"
           " FROM backups b JOIN stores s ON s.id = b.store_id WHERE s.url = ?"
           " ORDER BY b.taken_at_micros DESC, b.name DESC");
  sel.bind(1, store_url);
  while (sel.step()) {
    BackupRecord r;
    r.name = sel.text(0);
    r.taken_at_micros = sel.i64(1);
    r.format = sel.text(2);
    r.source = sel.text(3);
    r.data_file = sel.text(4);
    r.compression = parse_compression(sel.text(5)).value_or(Compression::kGzip);
    r.stored_size = static_cast<uint64_t>(sel.i64(6));
    if (!sel.is_null(7)) r.db_size = static_cast<uint64_t>(sel.i64(7));
    if (!sel.is_null(8)) r.revision = sel.i64(8);
    r.revision_exact = sel.i64(9) != 0;
    r.db_sha256 = sel.text(10);
    r.stored_sha256 = sel.text(11);
    r.hash_trailer = sel.i64(12) != 0;
    r.etcd_version = sel.text(13);
    r.cluster_id = sel.text(14);
    r.member_id = sel.text(15);
    if (!sel.is_null(20)) {
      VerificationRecord v;
      v.revision = sel.i64(16);
      v.total_key = sel.i64(17);
      v.live_keys = static_cast<uint64_t>(sel.i64(18));
      v.hash = static_cast<uint32_t>(sel.i64(19));
      v.verified_at_micros = sel.i64(20);
      r.verification = v;
    }
    if (!sel.is_null(22)) r.damage = DamageRecord{sel.i64(21), sel.text(22), sel.text(23), sel.i64(24) != 0};
    r.encryption = sel.text(25);
    r.encrypted_to = split_lines(sel.text(26));
    if (!sel.is_null(28)) {
      r.drill = DrillRecord{sel.i64(27),  sel.i64(28) != 0, sel.real(29), sel.text(30),
                            sel.text(31), sel.text(32),     sel.i64(33)};
    }
    out.push_back(std::move(r));
  }
  return out;
}

void Catalog::record_attempt(const std::string& store_url, const AttemptRecord& a) {
  int64_t sid = store_id(store_url);
  Stmt ins(
      db_,
      "INSERT INTO attempts (store_id, started_micros, finished_micros, result, reason, message, backup_name, origin) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  ins.bind(1, sid).bind(2, a.started_micros).bind(3, a.finished_micros).bind(4, a.result).bind(5, a.reason);
  ins.bind(6, a.message).bind(7, a.backup_name).bind(8, a.origin).step();
}

std::vector<AttemptRecord> Catalog::attempts(const std::string& store_url, int limit, const std::string& origin) {
  std::vector<AttemptRecord> out;
  Stmt sel(db_,
           "SELECT started_micros, finished_micros, result, reason, message, backup_name, origin FROM attempts "
           "WHERE store_id = (SELECT id FROM stores WHERE url = ?) AND (? = '' OR origin = ?) "
           "ORDER BY started_micros DESC, id DESC LIMIT ?");
  sel.bind(1, store_url).bind(2, origin).bind(3, origin).bind(4, static_cast<int64_t>(limit));
  while (sel.step()) {
    out.push_back({sel.i64(0), sel.i64(1), sel.text(2), sel.text(3), sel.text(4), sel.text(5), sel.text(6)});
  }
  return out;
}

std::optional<AudiencePin> Catalog::audience_pin(const std::string& store_url) {
  Stmt sel(db_, "SELECT key_id, labels, pinned_at_micros, pinned_by FROM audience_pins WHERE url = ?");
  sel.bind(1, store_url);
  if (!sel.step()) return std::nullopt;
  return AudiencePin{sel.text(0), split_lines(sel.text(1)), sel.i64(2), sel.text(3)};
}

void Catalog::pin_audience(const std::string& store_url, const AudiencePin& pin) {
  Stmt ins(db_,
           "INSERT INTO audience_pins (url, key_id, labels, pinned_at_micros, pinned_by) VALUES (?, ?, ?, ?, ?) "
           "ON CONFLICT(url) DO UPDATE SET key_id = excluded.key_id, labels = excluded.labels, "
           "pinned_at_micros = excluded.pinned_at_micros, pinned_by = excluded.pinned_by");
  ins.bind(1, store_url).bind(2, pin.key_id).bind(3, join_lines(pin.labels)).bind(4, pin.pinned_at_micros);
  ins.bind(5, pin.pinned_by).step();
}

}  // namespace etcdadm

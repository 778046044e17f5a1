// Point-in-time restore (`backup restore --to-revision N | --to-time T`): the newest snapshot at or
// before the target, then the change log replayed onto it (log_replay.h) up to exactly the target.
// Which backup and which segments are chosen, what the log reaches, and the replay itself.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "changelog/segment.h"
#include "common/timefmt.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm {

struct PointInTime {
  int64_t revision = 0;            // --to-revision N (0: not given)
  std::optional<SystemTime> time;  // --to-time
  bool log_end = false;            // --to-revision end: as far as the change log reaches
  // When set, the replay takes only the segments it accepts, as if the others were not in the
  // store (an auto-restore: the segments the cluster's controllers tagged, changelog/segment.h).
  std::function<bool(const changelog::SegmentName&)> segment_accepted;
  bool given() const { return revision > 0 || time.has_value() || log_end; }
  std::string describe() const;  // "revision 1234" / "2026-11-24T22:00:00Z" / "the end of the change log"
};

// Parses --to-time: RFC 3339 ("2026-11-24T22:00:00Z", fractions and offsets allowed) or relative
// to `now` ("-10m", "-2h", "-30s"). Throws kInvalidArgument.
SystemTime parse_point_in_time(const std::string& text, SystemTime now);
// The target of --to-revision (a revision, or "end") and --to-time, either or neither given
// (empty strings). Throws kInvalidArgument for both or a malformed one.
PointInTime point_in_time_from_flags(const std::string& to_revision, const std::string& to_time, SystemTime now);

// For `backup list`: how far each backup's change log reaches (by name; only backups with a cluster
// ID, a revision and a change log in the store), and until when it is known complete (its last
// revision's time, or the heartbeat's: changelog/heartbeat.h). One listing per cluster.
// A window ends at a gap when revisions after it cannot be restored from any backup and log: the
// gap runs from the revision after the window's reach to the revision before the next backup of the
// cluster taken past it (unknown when there is none yet, only log segments beyond the gap).
struct LogWindow {
  changelog::LogChain chain;
  int64_t complete_until_micros = 0;
  // The parts of the chain whose commit times are known only approximately (LateWindow markers).
  std::vector<changelog::LateWindow> late;
  std::optional<int64_t> gap_from;          // the first revision that cannot be restored
  std::optional<int64_t> restorable_again;  // the revision of the next backup past the gap
};
std::map<std::string, LogWindow> log_windows(BlobStore& store, const std::vector<BackupRecord>& backups);

// The backup a point-in-time restore starts from: the newest one (not known damaged, with a
// cluster ID and revision) taken at or before the target whose change log reaches the target.
// Throws kNotFound naming the newest reachable revision and time when none does.
BackupRecord choose_backup_for(BlobStore& store, const std::vector<BackupRecord>& backups, const PointInTime& target);

// `backup verify`: the change log that extends `backup`, as far as it reaches without a gap: every
// segment's stored bytes against its SHA-256 and, with `decrypt` (the key is at hand or the store
// is plain), its records too (one per revision, exactly the range its name gives). Throws
// changelog::SegmentError naming the first segment that fails.
struct ChangeLogCheck {
  int segments = 0;
  int64_t records = 0;  // counted only when decrypted
  int64_t snapshot_revision = 0;
  int64_t reaches = 0;  // the last revision the log holds (snapshot_revision when none)
  int64_t reaches_observed_ms = 0;
  std::optional<int64_t> next_segment_start;  // the log goes on after a gap, from this revision
  bool decrypted = false;
};
ChangeLogCheck verify_change_log(const BackupStore& backups, const BackupRecord& backup, bool decrypt);

// What a restore command starts from: `query` as find_backup resolves it (restore/resolve.h); with
// a point in time and 'latest', choose_backup_for among the catalog's backups instead.
BackupRecord find_backup_for(BlobStore& store, Catalog& catalog, const std::string& query, const PointInTime& target);

struct ReplayResult {
  int64_t snapshot_revision = 0;
  int64_t revision = 0;  // the revision the db holds afterwards
  int64_t records = 0;
  uint64_t events = 0;
  int segments = 0;
  int64_t last_observed_micros = 0;
  double seconds = 0;  // the replay alone: the log's segments read, checked and applied, the db synced
  // A --to-time target inside a late window: the window's revisions (not replayed: they may have
  // been committed after the target) and its bounds.
  struct Late {
    int64_t first_revision = 0, last_revision = 0;
    int64_t committed_after_micros = 0, received_micros = 0;
  };
  std::optional<Late> late;
};

// Replays `backup`'s change log onto its verified snapshot at `db_path` (db_bytes: the database's
// bytes, trailer excluded) up to the target. Every segment is checked (digest, decryption,
// records) as it is read; any failure throws and the caller discards its staging copy. Afterwards
// the file is exactly the database (no trailer).
ReplayResult replay_to(const BackupStore& backups, const BackupRecord& backup, const std::string& db_path,
                       uint64_t db_bytes, const PointInTime& target);

// What a replay extends: a snapshot of the cluster `cluster_id` (hex, as the store names it),
// called `what` in messages ("backup NAME", "member m1's data").
struct ReplayBase {
  std::string cluster_id;
  std::string what;
};
// The same onto any snapshot of the cluster (`etcdadm recover`: a surviving member's own db, which
// the log may have gone past). replay_to is this with the backup as the base.
ReplayResult replay_log_onto(const BackupStore& backups, const ReplayBase& base, const std::string& db_path,
                             uint64_t db_bytes, const PointInTime& target);

}  // namespace etcdadm

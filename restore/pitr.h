// Point-in-time restore (`backup restore --to-revision N | --to-time T`): the newest snapshot at or
// before the target, then the change log replayed onto it (log_replay.h) up to exactly the target.
// Which backup and which segments are chosen, what the log reaches, and the replay itself.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "changelog/segment.h"
#include "common/timefmt.h"
#include "store/blob_store.h"
#include "store/layout.h"

namespace etcdadm {

struct PointInTime {
  int64_t revision = 0;             // --to-revision (0: not given)
  std::optional<SystemTime> time;   // --to-time
  bool given() const { return revision > 0 || time.has_value(); }
  std::string describe() const;     // "revision 1234" / "2026-11-24T22:00:00Z"
};

// Parses --to-time: RFC 3339 ("2026-11-24T22:00:00Z", fractions and offsets allowed) or relative
// to `now` ("-10m", "-2h", "-30s"). Throws kInvalidArgument.
SystemTime parse_point_in_time(const std::string& text, SystemTime now);

// For `backup list`: how far each backup's change log reaches (by name; backups without a cluster
// ID or revision, and those whose log is empty, get the chain that reaches their own revision).
// One listing of the change log per cluster.
std::map<std::string, changelog::LogChain> log_windows(BlobStore& store, const std::vector<BackupRecord>& backups);

// The backup a point-in-time restore starts from: the newest one (not known damaged, with a
// cluster ID and revision) taken at or before the target whose change log reaches the target.
// Throws kNotFound naming the newest reachable revision and time when none does.
BackupRecord choose_backup_for(BlobStore& store, const std::vector<BackupRecord>& backups, const PointInTime& target);

struct ReplayResult {
  int64_t snapshot_revision = 0;
  int64_t revision = 0;   // the revision the db holds afterwards
  int64_t records = 0;
  uint64_t events = 0;
  int segments = 0;
  int64_t last_observed_micros = 0;
};

// Replays `backup`'s change log onto its verified snapshot at `db_path` (db_bytes: the database's
// bytes, trailer excluded) up to the target. Every segment is checked (digest, decryption,
// records) as it is read; any failure throws and the caller discards its staging copy. Afterwards
// the file is exactly the database (no trailer).
ReplayResult replay_to(BlobStore& store, const BackupRecord& backup, const std::string& db_path, uint64_t db_bytes,
                       const PointInTime& target);

}  // namespace etcdadm

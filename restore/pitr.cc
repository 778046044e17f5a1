#include "restore/pitr.h"

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "restore/bolt_reader.h"
#include "restore/log_replay.h"
#include "restore/native_restore.h"

namespace etcdadm {

namespace {

std::string when_ms(int64_t ms) { return ms > 0 ? format_rfc3339_micros(from_unix_micros(ms * 1000)) : "unknown time"; }

}  // namespace

std::string PointInTime::describe() const {
  if (revision > 0) return "revision " + std::to_string(revision);
  if (time) return format_rfc3339_micros(*time);
  return "the newest state";
}

SystemTime parse_point_in_time(const std::string& text, SystemTime now) {
  if (!text.empty() && text[0] == '-') {
    if (auto d = parse_duration(text.substr(1)); d && d->count() > 0) return now - *d;
  } else if (auto t = parse_rfc3339(text)) {
    return *t;
  }
  throw Error(ErrorKind::kInvalidArgument, "invalid --to-time " + text,
              "an RFC 3339 time (2026-11-24T22:00:00Z) or a time relative to now (-10m, -2h)");
}

namespace {

// The segments of each cluster's log, listed once per cluster however many backups ask.
class SegmentsByCluster {
 public:
  explicit SegmentsByCluster(BlobStore& store) : store_(store) {}
  const std::vector<changelog::SegmentName>& of(const std::string& cluster_id) {
    auto it = listed_.find(cluster_id);
    if (it == listed_.end()) it = listed_.emplace(cluster_id, changelog::list_segments(store_, cluster_id)).first;
    return it->second;
  }

 private:
  BlobStore& store_;
  std::map<std::string, std::vector<changelog::SegmentName>> listed_;
};

}  // namespace

std::map<std::string, changelog::LogChain> log_windows(BlobStore& store, const std::vector<BackupRecord>& backups) {
  SegmentsByCluster segments(store);
  std::map<std::string, changelog::LogChain> out;
  for (const auto& b : backups) {
    if (b.cluster_id.empty() || !b.revision) continue;
    const auto& of_cluster = segments.of(b.cluster_id);
    if (!of_cluster.empty()) out[b.name] = changelog::chain_from(of_cluster, *b.revision);
  }
  return out;
}

BackupRecord choose_backup_for(BlobStore& store, const std::vector<BackupRecord>& backups, const PointInTime& target) {
  SegmentsByCluster segments(store);
  int64_t best_reach = 0, best_reach_ms = 0;
  std::optional<int64_t> best_gap_end;
  std::string best_name;
  for (const auto& b : backups) {  // newest first
    if (b.damage || !b.revision || b.cluster_id.empty()) continue;
    if (target.revision > 0 && *b.revision > target.revision) continue;
    if (target.time && b.taken_at_micros > to_unix_micros(*target.time)) continue;
    changelog::LogChain chain = changelog::chain_from(segments.of(b.cluster_id), *b.revision, target.revision);
    if (chain.reaches > best_reach) {
      best_reach = chain.reaches;
      best_reach_ms = chain.reaches_observed_ms;
      best_gap_end = chain.next_segment_start;
      best_name = b.name;
    }
    // A time is reached when the unbroken log from the snapshot holds a revision received after
    // it: then every revision received before it is in the log too.
    bool reaches = target.revision > 0 ? chain.reaches >= target.revision
                                       : chain.reaches_observed_ms * 1000 >= to_unix_micros(*target.time);
    if (reaches) return b;
  }
  throw Error(ErrorKind::kNotFound,
              "no backup and change log reach " + target.describe() +
                  (best_name.empty() ? ": no backup with a cluster ID and revision is old enough"
                                     : ": the furthest is revision " + std::to_string(best_reach) + " (received " +
                                           when_ms(best_reach_ms) + "), from backup " + best_name +
                                           (best_gap_end ? "; the log has a gap before revision " + std::to_string(*best_gap_end)
                                                         : "")),
              "pick an earlier target, or `etcdadm backup list` to see each backup's restorable window");
}

ReplayResult replay_to(BlobStore& store, const BackupRecord& backup, const std::string& db_path, uint64_t db_bytes,
                       const PointInTime& target) {
  ReplayResult r;
  {
    auto db = BoltReader::open(db_path, db_bytes);
    r.snapshot_revision = store_revision(*db);
  }
  r.revision = r.snapshot_revision;
  if (target.revision > 0 && target.revision < r.snapshot_revision) {
    throw Error(ErrorKind::kInvalidArgument,
                "backup " + backup.name + " already holds revision " + std::to_string(r.snapshot_revision) + ", past " +
                    target.describe(),
                "restore an older backup to reach it");
  }
  auto segments = changelog::list_segments(store, backup.cluster_id);
  changelog::LogChain chain = changelog::chain_from(segments, r.snapshot_revision, target.revision);
  if (target.revision > 0 && chain.reaches < target.revision) {
    throw Error(ErrorKind::kNotFound,
                target.describe() + " is beyond the change log of backup " + backup.name +
                    ": the newest reachable revision is " + std::to_string(chain.reaches) + " (received " +
                    when_ms(chain.reaches_observed_ms) + ")" +
                    (chain.next_segment_start ? "; the log has a gap before revision " + std::to_string(*chain.next_segment_start)
                                              : ""),
                "pick a target at or before revision " + std::to_string(chain.reaches));
  }
  const int64_t until_micros = target.time ? to_unix_micros(*target.time) : INT64_MAX;
  LogReplay replay(db_path, db_bytes, r.snapshot_revision);
  bool done = false;
  for (const auto& segment : chain.segments) {
    if (done) break;
    ++r.segments;
    changelog::read_segment(store, segment, [&](const changelog::Record& rec) {
      if (done || rec.revision() <= replay.revision()) return;  // an overlap: never twice
      if ((target.revision > 0 && rec.revision() > target.revision) || rec.observed_unix_micros() > until_micros) {
        done = true;
        return;
      }
      replay.apply(rec);
      ++r.records;
      r.last_observed_micros = rec.observed_unix_micros();
    });
  }
  replay.finish();
  r.revision = replay.revision();
  r.events = replay.events();
  if (target.revision > 0 && r.revision != target.revision) {
    throw changelog::SegmentError(ErrorKind::kCorrupt, "the change log of backup " + backup.name + " ended at revision " +
                                         std::to_string(r.revision) + ", short of " + target.describe());
  }
  spdlog::info("replayed {} revisions ({} events, {} segments) onto backup {}: revision {} -> {}", r.records, r.events,
               r.segments, backup.name, r.snapshot_revision, r.revision);
  return r;
}

}  // namespace etcdadm

#include "restore/pitr.h"

#include <spdlog/spdlog.h>

#include <set>

#include "changelog/heartbeat.h"
#include "common/error.h"
#include "common/progress.h"
#include "etcd/datadir/bolt_reader.h"
#include "etcd/datadir/mvcc.h"
#include "restore/log_replay.h"
#include "restore/native_restore.h"
#include "restore/resolve.h"
#include "restore/segment_read_ahead.h"

namespace etcdadm {

namespace {

// Records decoded and not yet written, per segment being read ahead (restore/segment_read_ahead.h).
constexpr uint64_t kReadAheadBytesPerSegment = 4u << 20;

std::string when_ms(int64_t ms) { return ms > 0 ? format_rfc3339_micros(from_unix_micros(ms * 1000)) : "unknown time"; }

}  // namespace

std::string PointInTime::describe() const {
  if (revision > 0) return "revision " + std::to_string(revision);
  if (time) return format_rfc3339_micros(*time);
  return "the end of the change log";
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

PointInTime point_in_time_from_flags(const std::string& to_revision, const std::string& to_time, SystemTime now) {
  if (!to_revision.empty() && !to_time.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "give --to-revision or --to-time, not both");
  }
  PointInTime pit;
  if (!to_time.empty()) pit.time = parse_point_in_time(to_time, now);
  if (to_revision == "end") {
    pit.log_end = true;
  } else if (!to_revision.empty()) {
    size_t used = 0;
    try {
      pit.revision = std::stoll(to_revision, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != to_revision.size() || pit.revision <= 0) {
      throw Error(ErrorKind::kInvalidArgument, "invalid --to-revision " + to_revision,
                  "a revision (a positive number), or 'end' for the newest revision the change log holds");
    }
  }
  return pit;
}

namespace {

// The segments and the heartbeat of each cluster's log, read once per cluster however many
// backups ask.
class SegmentsByCluster {
 public:
  explicit SegmentsByCluster(BlobStore& store) : store_(store) {}
  const std::vector<changelog::SegmentName>& of(const std::string& cluster_id) { return log(cluster_id).segments; }
  const std::optional<changelog::Heartbeat>& heartbeat(const std::string& cluster_id) {
    return log(cluster_id).heartbeat;
  }
  const std::vector<changelog::LateWindow>& late(const std::string& cluster_id) { return log(cluster_id).late; }

 private:
  struct Log {
    std::vector<changelog::SegmentName> segments;
    std::optional<changelog::Heartbeat> heartbeat;
    std::vector<changelog::LateWindow> late;
  };
  const Log& log(const std::string& cluster_id) {
    auto it = listed_.find(cluster_id);
    if (it == listed_.end()) {
      Log l;
      bool heartbeat_listed = false;
      l.segments = changelog::list_segments(store_, cluster_id, &heartbeat_listed, &l.late);
      if (heartbeat_listed) l.heartbeat = changelog::read_heartbeat(store_, cluster_id);
      it = listed_.emplace(cluster_id, std::move(l)).first;
    }
    return it->second;
  }
  BlobStore& store_;
  std::map<std::string, Log> listed_;
};

}  // namespace

std::map<std::string, LogWindow> log_windows(BlobStore& store, const std::vector<BackupRecord>& backups) {
  SegmentsByCluster segments(store);
  // Each cluster's restorable snapshots, by revision: where a window's gap ends.
  std::map<std::string, std::set<int64_t>> snapshots;
  for (const auto& b : backups) {
    if (!b.damage && b.revision && !b.cluster_id.empty()) snapshots[b.cluster_id].insert(*b.revision);
  }
  std::map<std::string, LogWindow> out;
  for (const auto& b : backups) {
    if (b.cluster_id.empty() || !b.revision) continue;
    const auto& of_cluster = segments.of(b.cluster_id);
    if (of_cluster.empty() && !segments.heartbeat(b.cluster_id)) continue;
    LogWindow w;
    w.chain = changelog::chain_from(of_cluster, *b.revision);
    w.complete_until_micros =
        changelog::complete_until_micros(w.chain, segments.heartbeat(b.cluster_id), segments.late(b.cluster_id));
    if (w.complete_until_micros == 0) continue;  // no segment extends it, no heartbeat speaks for it
    for (const auto& late : segments.late(b.cluster_id)) {
      // The part of each late window this backup's log holds.
      if (late.last_revision <= *b.revision || late.first_revision > w.chain.reaches) continue;
      changelog::LateWindow part = late;
      part.first_revision = std::max(late.first_revision, *b.revision + 1);
      part.last_revision = std::min(late.last_revision, w.chain.reaches);
      w.late.push_back(part);
    }
    const auto& revisions = snapshots[b.cluster_id];
    auto next = revisions.upper_bound(w.chain.reaches);
    if (next != revisions.end() && *next > w.chain.reaches + 1) {
      w.gap_from = w.chain.reaches + 1;
      w.restorable_again = *next;
    } else if (next == revisions.end() && w.chain.next_segment_start) {
      w.gap_from = w.chain.reaches + 1;  // segments beyond it, but no snapshot to replay them from yet
    }
    out[b.name] = std::move(w);
  }
  return out;
}

BackupRecord choose_backup_for(BlobStore& store, const std::vector<BackupRecord>& backups, const PointInTime& target) {
  SegmentsByCluster segments(store);
  int64_t best_reach = 0, best_reach_ms = 0;
  std::optional<int64_t> best_gap_end;
  std::string best_name;
  // The oldest usable backup, and the oldest one past the target: the restorable points around a
  // target no log reaches.
  const BackupRecord* oldest = nullptr;
  const BackupRecord* next_after = nullptr;
  const SystemTime now = std::chrono::system_clock::now();
  for (const auto& b : backups) {  // newest first
    if (!why_not_latest(b, now).empty() || !b.revision || b.cluster_id.empty()) continue;
    oldest = &b;
    if ((target.revision > 0 && *b.revision > target.revision) ||
        (target.time && b.taken_at_micros > to_unix_micros(*target.time))) {
      next_after = &b;
      continue;
    }
    changelog::LogChain chain = changelog::chain_from(segments.of(b.cluster_id), *b.revision, target.revision);
    const int64_t complete_until =
        changelog::complete_until_micros(chain, segments.heartbeat(b.cluster_id), segments.late(b.cluster_id));
    if (chain.reaches > best_reach) {
      best_reach = chain.reaches;
      best_reach_ms = complete_until / 1000;
      best_gap_end = chain.next_segment_start;
      best_name = b.name;
    }
    // A time is reached when the unbroken log from the snapshot is known complete until then: it
    // holds a revision received after it, or a heartbeat after it proves the cluster had no
    // revision the log lacks (changelog/heartbeat.h). The end of the log: the
    // newest backup's log reaches furthest (an older one's log is the same log, or ends at a gap).
    bool reaches = target.log_end || (target.revision > 0 ? chain.reaches >= target.revision
                                                          : complete_until >= to_unix_micros(*target.time));
    if (reaches) return b;
  }
  const std::string cannot = "no backup and change log reach " + target.describe();
  auto backup_point = [](const BackupRecord& b) {
    return "revision " + std::to_string(*b.revision) + " (backup " + b.name + ", taken " +
           when_ms(b.taken_at_micros / 1000) + ")";
  };
  if (oldest == nullptr) {
    throw Error(ErrorKind::kNotFound, cannot + ": the store has no backup with a cluster ID and revision",
                "take a backup (etcdadm backup save), or restore a backup by name without a point-in-time target");
  }
  if (best_name.empty()) {
    throw Error(ErrorKind::kNotFound, cannot + ": it is before the earliest restorable point, " + backup_point(*oldest),
                "the earliest restorable point is revision " + std::to_string(*oldest->revision) + " / time " +
                    when_ms(oldest->taken_at_micros / 1000) + ": pick a target at or after it (--to-revision " +
                    std::to_string(*oldest->revision) + "), or restore backup " + oldest->name);
  }
  std::string before = "revision " + std::to_string(best_reach) + " (the log of backup " + best_name +
                       " is complete until " + when_ms(best_reach_ms) + ")";
  if (next_after != nullptr) {
    // Between the end of the unbroken log and the next snapshot nothing is restorable, whatever
    // segments the store holds in between: a replay needs an unbroken log from a snapshot.
    throw Error(ErrorKind::kNotFound,
                cannot + ": it falls in a gap of the change log, revisions " + std::to_string(best_reach + 1) + " to " +
                    std::to_string(*next_after->revision - 1) + ", which no backup and log can restore" +
                    (best_gap_end ? " (the log breaks before revision " + std::to_string(*best_gap_end) + ")" : ""),
                "the nearest restorable points: " + before + " (--to-revision " + std::to_string(best_reach) +
                    "), and " + backup_point(*next_after));
  }
  throw Error(ErrorKind::kNotFound,
              cannot + ": the furthest is " + before +
                  (best_gap_end ? "; the log has a gap before revision " + std::to_string(*best_gap_end) : ""),
              "pick a target at or before revision " + std::to_string(best_reach) +
                  ", or `etcdadm backup list` to see each backup's restorable window");
}

BackupRecord find_backup_for(BlobStore& store, Catalog& catalog, const std::string& query, const PointInTime& target) {
  if (!target.given() || query != "latest") return find_backup(store, catalog, query);
  catalog.sync(store);
  return choose_backup_for(store, catalog.backups(store.url()), target);
}

ChangeLogCheck verify_change_log(const BackupStore& backups, const BackupRecord& backup, bool decrypt) {
  BlobStore& store = *backups;
  ChangeLogCheck check;
  if (backup.cluster_id.empty() || !backup.revision) return check;
  check.snapshot_revision = check.reaches = *backup.revision;
  auto segments = changelog::list_segments(store, backup.cluster_id);
  changelog::LogChain chain = changelog::chain_from(segments, *backup.revision);
  check.next_segment_start = chain.next_segment_start;
  check.decrypted = decrypt;
  for (const auto& segment : chain.segments) {
    if (decrypt) {
      changelog::read_segment_or_twin(backups, segment, segments, [&](const changelog::Record& rec) {
        if (rec.revision() > check.reaches) ++check.records;  // overlapping segments: each revision once
      });
    } else {
      changelog::read_segment_bytes(store, segment);
    }
    ++check.segments;
    check.reaches = segment.last_revision;
    check.reaches_observed_ms = segment.last_observed_ms;
  }
  return check;
}

ReplayResult replay_to(const BackupStore& backups, const BackupRecord& backup, const std::string& db_path,
                       uint64_t db_bytes, const PointInTime& target) {
  return replay_log_onto(backups, ReplayBase{backup.cluster_id, "backup " + backup.name}, db_path, db_bytes, target);
}

ReplayResult replay_log_onto(const BackupStore& backups, const ReplayBase& base, const std::string& db_path,
                             uint64_t db_bytes, const PointInTime& target) {
  BlobStore& store = *backups;
  ReplayResult r;
  {
    auto db = BoltReader::open(db_path, db_bytes);
    r.snapshot_revision = store_revision(*db);
  }
  r.revision = r.snapshot_revision;
  if (target.revision > 0 && target.revision < r.snapshot_revision) {
    throw Error(
        ErrorKind::kInvalidArgument,
        base.what + " already holds revision " + std::to_string(r.snapshot_revision) + ", past " + target.describe(),
        "restore an older backup to reach it");
  }
  std::vector<changelog::LateWindow> late_windows;
  auto segments = changelog::list_segments(store, base.cluster_id, nullptr, &late_windows);
  if (target.segment_accepted) std::erase_if(segments, [&](const auto& s) { return !target.segment_accepted(s); });
  changelog::LogChain chain = changelog::chain_from(segments, r.snapshot_revision, target.revision);
  if (target.revision > 0 && chain.reaches < target.revision) {
    throw Error(ErrorKind::kNotFound,
                target.describe() + " is beyond the change log of " + base.what +
                    ": the newest reachable revision is " + std::to_string(chain.reaches) + " (received " +
                    when_ms(chain.reaches_observed_ms) + ")" +
                    (chain.next_segment_start
                         ? "; the log has a gap before revision " + std::to_string(*chain.next_segment_start)
                         : ""),
                "pick a target at or before revision " + std::to_string(chain.reaches));
  }
  const int64_t until_micros = target.time ? to_unix_micros(*target.time) : INT64_MAX;
  if (target.time && chain.reaches_observed_ms * 1000 < until_micros) {
    const int64_t complete_until =
        changelog::complete_until_micros(chain, changelog::read_heartbeat(store, base.cluster_id), late_windows);
    if (complete_until < until_micros) {
      throw Error(ErrorKind::kNotFound,
                  target.describe() + " is beyond the change log of " + base.what + ": it is complete until " +
                      when_ms(complete_until / 1000) + " (revision " + std::to_string(chain.reaches) + ")",
                  "pick a time at or before " + when_ms(complete_until / 1000));
    }
  }
  const auto started = std::chrono::steady_clock::now();
  LogReplay replay(db_path, db_bytes, r.snapshot_revision);
  const int64_t last = target.revision > 0 ? target.revision : chain.reaches;
  Progress progress("replay of the change log onto " + base.what, ProgressUnit::kRevisions,
                    last > r.snapshot_revision ? static_cast<uint64_t>(last - r.snapshot_revision) : 0);
  // Segments are read and decoded on other threads while this one writes the db.
  const size_t readers = SegmentReadAhead::default_threads();
  SegmentReadAhead ahead(backups, chain.segments, segments, readers, readers + 1, kReadAheadBytesPerSegment);
  while (auto rec = ahead.next()) {
    if (rec->revision <= replay.revision()) continue;  // an overlap: never twice
    if ((target.revision > 0 && rec->revision > target.revision) || rec->observed_unix_micros > until_micros) {
      // A --to-time inside a late window (capture was away: changelog/segment.h LateWindow): the
      // record was committed between its bound and its receipt, perhaps by the target. The
      // replay stops before it, and the window is named: by its marker, or by this record alone
      // when the marker never got written.
      if (target.time && rec->committed_after_unix_micros > 0 && rec->committed_after_unix_micros < until_micros) {
        r.late = ReplayResult::Late{rec->revision, rec->revision, rec->committed_after_unix_micros,
                                    rec->observed_unix_micros};
        for (const auto& w : late_windows) {
          if (w.first_revision <= rec->revision && rec->revision <= w.last_revision) {
            r.late->last_revision = w.last_revision;
            r.late->received_micros = std::max(r.late->received_micros, w.received_ms * 1000);
          }
        }
      }
      break;
    }
    const int64_t before = replay.revision();
    const int64_t observed = rec->observed_unix_micros;
    replay.apply(std::move(*rec));
    progress.add(static_cast<uint64_t>(replay.revision() - before));
    ++r.records;
    r.last_observed_micros = observed;
  }
  r.segments = static_cast<int>(ahead.segments_begun());
  replay.finish();
  progress.finish();
  r.revision = replay.revision();
  r.events = replay.events();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (target.revision > 0 && r.revision != target.revision) {
    throw changelog::SegmentError(ErrorKind::kCorrupt, "the change log of " + base.what + " ended at revision " +
                                                           std::to_string(r.revision) + ", short of " +
                                                           target.describe());
  }
  spdlog::info("replayed {} revisions ({} events, {} segments) onto {} in {:.2f}s: revision {} -> {}", r.records,
               r.events, r.segments, base.what, r.seconds, r.snapshot_revision, r.revision);
  if (r.late) {
    spdlog::warn(
        "{} falls inside a window where commit times are known only approximately: revisions {}..{} were "
        "committed after {} and received by {} (the sidecar's capture was away), maybe before the target; "
        "restored revision {}, the newest known committed by then (--to-revision {} includes them)",
        target.describe(), r.late->first_revision, r.late->last_revision,
        format_rfc3339_micros(from_unix_micros(r.late->committed_after_micros)),
        format_rfc3339_micros(from_unix_micros(r.late->received_micros)), r.revision, r.late->last_revision);
  }
  return r;
}

}  // namespace etcdadm

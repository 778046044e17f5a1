#include "backup/prune.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "changelog/segment.h"
#include "common/error.h"
#include "common/timefmt.h"
#include "store/blob_capabilities.h"
#include "store/layout.h"

namespace etcdadm {

namespace {

// Every key of each backup directory, from one listing of the store.
std::map<std::string, std::vector<std::string>> keys_by_directory(const std::vector<BlobInfo>& blobs) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& b : blobs) {
    auto slash = b.key.find('/');
    if (slash == std::string::npos) continue;  // store-level files (the marker)
    out[b.key.substr(0, slash)].push_back(b.key);
  }
  return out;
}

// Deletes the backups in three passes over all of them: first what makes each one complete
// (_etcd_backup.meta where it has one), then etcdadm-backup.json, which beside the data file would
// keep it listed (docs/store-format.md §5), then the rest. Each backup stops being listed before
// any other file of it goes, as when they were deleted one by one, and each pass is one batch
// (S3 DeleteObjects: 1,000 keys a request; 9,000 backups take 27 requests, not 27,000). A prune
// killed between passes leaves directories without a completion file: incomplete, and removed as
// such by the next prune.
void delete_backups(BlobStore& store, const std::vector<const BackupListing*>& backups,
                    const std::map<std::string, std::vector<std::string>>& dirs) {
  std::vector<std::string> completion, metadata, rest;
  for (const BackupListing* b : backups) {
    completion.push_back(b->completion_key);
    std::string meta = b->name + "/" + kBackupMetaFile;
    bool separate_meta = b->has_backup_meta && meta != b->completion_key;
    if (separate_meta) metadata.push_back(meta);
    auto it = dirs.find(b->name);
    if (it == dirs.end()) continue;
    for (const auto& k : it->second) {
      if (k != b->completion_key && !(separate_meta && k == meta)) rest.push_back(k);
    }
  }
  store.remove_many(completion);
  store.remove_many(metadata);
  store.remove_many(rest);
}

// What the store's metadata says of each listed backup: from the catalog when there is one (its
// sync reads only the metadata of backups it has not seen: a sidecar prunes after every backup),
// from each backup's metadata otherwise. A backup whose metadata cannot be read gets a record of
// format kUnreadableFormat.
std::map<std::string, BackupRecord> records_of(BlobStore& store, Catalog* catalog,
                                               const std::map<std::string, BackupListing>& listings) {
  std::map<std::string, BackupRecord> out;
  if (catalog != nullptr) {
    catalog->sync(store);
    for (auto& b : catalog->backups(store.url())) {
      if (listings.count(b.name)) out[b.name] = std::move(b);
    }
  }
  for (const auto& [name, listing] : listings) {
    if (out.count(name)) continue;
    try {
      out[name] = load_backup_record(store, listing);
    } catch (const Error& e) {
      out[name] = unreadable_backup_record(listing, e.what());
    }
  }
  return out;
}

// Why a listed backup is not one a restore could use ("" when it is): its metadata must parse and
// name the data file the listing holds, of the size it records, and nobody may have found it
// damaged. Only such backups fill a retention quota (backup/retention.h).
std::string why_not_whole(const BackupListing& l, const BackupRecord& r) {
  if (r.format == kUnreadableFormat) {
    return "its metadata cannot be read" + (r.damage ? " (" + r.damage->reason + ")" : std::string());
  }
  if (r.data_file.empty() || l.data_key != l.name + "/" + r.data_file) {
    return "its metadata names the data file '" + r.data_file + "', which the store does not hold";
  }
  bool size_recorded = r.stored_size > 0 || (r.rekey && r.rekey->stored_size > 0);
  if (size_recorded && l.data_size != r.stored_size && !(r.rekey && l.data_size == r.rekey->stored_size)) {
    return "its data file holds " + std::to_string(l.data_size) + " bytes, its metadata records " +
           std::to_string(r.stored_size);
  }
  if (r.damage) return "found damaged: " + r.damage->reason;
  return "";
}

// The segments of the change log that no kept backup reaches into: those whose last revision is at
// or below the oldest kept backup of their cluster (a replay from it starts after them), and all of
// a cluster none of whose backups is kept.
// `late_markers`: the late-window markers beside them (changelog/segment.h LateWindow), by the same
// rule.
std::vector<std::string> unneeded_segments(const std::vector<BlobInfo>& blobs,
                                           const std::map<std::string, BackupRecord>& records,
                                           const std::vector<std::string>& kept,
                                           std::vector<std::string>* late_markers) {
  std::vector<std::string> out;
  // The change log's keys, from the prune's one listing of the store.
  const std::string log_prefix = std::string(changelog::kChangeLogDir) + "/";
  std::vector<BlobInfo> all;
  for (const auto& b : blobs) {
    if (b.key.starts_with(log_prefix)) all.push_back(b);
  }
  if (all.empty()) return out;
  std::map<std::string, int64_t> oldest_kept;  // cluster -> revision of its oldest kept backup
  for (const auto& name : kept) {
    auto it = records.find(name);
    if (it == records.end()) continue;
    const BackupRecord& r = it->second;
    // Unreadable metadata: its cluster is unknown, so nothing may be deleted on its account.
    if (r.format == kUnreadableFormat) return {};
    if (r.cluster_id.empty() || !r.revision) continue;
    auto [pos, fresh] = oldest_kept.emplace(r.cluster_id, *r.revision);
    if (!fresh && *r.revision < pos->second) pos->second = *r.revision;
  }
  auto unneeded = [&](const std::string& cluster, int64_t last) {
    auto it = oldest_kept.find(cluster);
    return it == oldest_kept.end() || last <= it->second;
  };
  for (const auto& blob : all) {
    if (auto s = changelog::parse_segment_key(blob.key)) {
      if (unneeded(s->cluster_id, s->last_revision)) out.push_back(blob.key);
    } else if (auto w = changelog::parse_late_key(blob.key)) {
      if (unneeded(w->cluster_id, w->last_revision)) late_markers->push_back(blob.key);
    }
  }
  return out;
}

}  // namespace

PruneResult prune_backups(BlobStore& store, Catalog* catalog, const RetentionPolicy& policy, SystemTime now,
                          const PruneOptions& options) {
  PruneResult r;
  r.dry_run = options.dry_run;
  std::vector<std::string> names;
  std::map<std::string, BackupListing> listings;
  // One listing of the store serves the plan and the deletes.
  const std::vector<BlobInfo> blobs = store.list("");
  for (auto& l : backups_in_listing(blobs)) {
    names.push_back(l.name);
    listings[l.name] = std::move(l);
  }
  const std::map<std::string, BackupRecord> records = records_of(store, catalog, listings);
  std::vector<RetentionEntry> entries;
  for (const auto& name : names) entries.push_back({name, why_not_whole(listings.at(name), records.at(name))});
  r.plan = plan_retention(entries, now, policy);
  for (const auto& u : r.plan.unparseable) spdlog::warn("not pruning {}: its name is not a backup time", u);
  for (const auto& f : r.plan.future) {
    spdlog::warn(
        "not pruning {} and not counting it toward {}: it is dated after this host's clock ({}); a clock "
        "is wrong here or where it was written",
        f, policy.describe(), format_rfc3339_seconds(now));
  }
  for (const auto& [name, why] : r.plan.not_whole) {
    spdlog::warn("not pruning {} and not counting it toward {}: {}", name, policy.describe(), why);
  }
  if (!r.plan.remove.empty() && !r.plan.keeps_a_recent_backup && !options.allow_no_recent_backup) {
    std::string newest = r.plan.newest_whole.empty() ? "there is none" : "the newest is " + r.plan.newest_whole;
    throw Error(ErrorKind::kInvalidArgument,
                "refusing to prune: the store holds no whole backup younger than " +
                    format_duration_short(*policy.shortest_period()) + " (" + policy.describe() + ") at " +
                    format_rfc3339_seconds(now) + " by this host's clock (" + newest + "), and the plan would delete " +
                    std::to_string(r.plan.remove.size()) + " backups",
                "backups are failing, or this host's clock is ahead: check both (`etcdadm backup list`, `date -u`); "
                "to prune anyway, pass --allow-no-recent-backup");
  }
  // A locked backup stays, reported, and the plan goes on with the others: on a versioned bucket a
  // delete would only hide it behind a delete marker, and its data could not be removed anyway.
  std::vector<std::string> removable;
  for (const auto& name : r.plan.remove) {
    const BackupListing& l = listings.at(name);
    std::optional<BlobLocks::Lock> lock = lock_of(store, l.completion_key);
    if (!lock && !l.data_key.empty()) lock = lock_of(store, l.data_key);
    if (!lock) {
      removable.push_back(name);
      continue;
    }
    std::string kept_until = lock->until_micros > 0
                                 ? "kept until " + format_rfc3339_seconds(from_unix_micros(lock->until_micros))
                                 : "kept until the hold is released";
    r.locked.emplace_back(name, kept_until + " (" + lock->why + ")");
    spdlog::info("not pruning backup {}: the store keeps it: {} ({})", name, kept_until, lock->why);
  }
  r.plan.remove = removable;
  // Names the policy cannot read are kept: their segments too.
  std::vector<std::string> kept = r.plan.keep;
  kept.insert(kept.end(), r.plan.unparseable.begin(), r.plan.unparseable.end());
  for (const auto& [name, why] : r.locked) kept.push_back(name);
  r.segments_removed = unneeded_segments(blobs, records, kept, &r.late_markers_removed);
  if (options.dry_run) return r;

  auto dirs = keys_by_directory(blobs);
  std::vector<const BackupListing*> doomed;
  for (const auto& name : r.plan.remove) doomed.push_back(&listings.at(name));
  delete_backups(store, doomed, dirs);
  for (const auto& name : r.plan.remove) {
    r.deleted.push_back(name);
    spdlog::info("pruned backup {} ({})", name, policy.describe());
  }
  if (catalog != nullptr) {
    try {
      catalog->forget(store.url(), r.deleted);  // an incremental sync would not see them go
    } catch (const Error& e) {
      spdlog::warn("catalog not updated after pruning: {}", e.what());
    }
  }
  // Directories whose marker is gone (an interrupted prune) and that are older than the newest
  // whole backup (so not a save in progress) are finished off. Not the newest entry: one dated
  // in the future would make every directory look older.
  std::set<std::string> listed(names.begin(), names.end());
  auto newest = r.plan.newest_whole.empty() ? std::nullopt : parse_backup_name(r.plan.newest_whole);
  for (const auto& [dir, keys] : dirs) {
    if (listed.count(dir)) continue;
    auto parsed = parse_backup_name(dir);
    // Another writer may be between its data file and its marker right now: only directories
    // older than the newest backup and more than an hour old count as abandoned.
    if (!parsed || !newest || parsed->time >= newest->time || parsed->time > now - std::chrono::hours(1)) continue;
    store.remove_many(keys);
    r.leftovers_removed.push_back(dir);
    spdlog::info("removed incomplete backup directory {}", dir);
  }
  // After the backups: a segment goes only once no kept backup can need it.
  store.remove_many(r.segments_removed);
  store.remove_many(r.late_markers_removed);  // after the segments they describe
  if (!r.segments_removed.empty())
    spdlog::info("pruned {} change log segments no kept backup needs", r.segments_removed.size());
  // Last: what a versioned bucket kept of this and earlier deletes (and of overwritten files, such
  // as a rekey's), so that a prune killed before this point is finished by the next one.
  if (!options.keep_noncurrent_versions) {
    r.versions = purge_noncurrent_versions(store, "");
    if (r.versions.removed > 0) {
      spdlog::info("removed {} noncurrent versions and delete markers from the versioned bucket", r.versions.removed);
    }
    for (const auto& refused : r.versions.refused) spdlog::warn("the bucket keeps a noncurrent version: {}", refused);
  }
  sync_after(catalog, store, "pruning");
  return r;
}

}  // namespace etcdadm

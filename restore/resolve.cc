#include "restore/resolve.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "common/error.h"
#include "restore/damage.h"

namespace etcdadm {

static std::string list_names(const std::vector<const BackupRecord*>& items) {
  std::string s;
  for (const auto* r : items) s += "\n  " + r->name;
  return s;
}

std::string why_not_latest(const BackupRecord& r, SystemTime now) {
  if (r.damage) {
    return "recorded as damaged" +
           (r.damage->detected_at_micros
                ? " at " + format_rfc3339_seconds(from_unix_micros(r.damage->detected_at_micros))
                : std::string()) +
           ": " + r.damage->reason;
  }
  if (r.data_file.empty()) return "its metadata names no data file the store holds";
  if (r.taken_at_micros > to_unix_micros(now + kLatestFutureTolerance)) {
    return "dated " + format_rfc3339_seconds(from_unix_micros(r.taken_at_micros)) +
           ", in the future by this host's clock (a clock that was wrong, or not a backup)";
  }
  return "";
}

const BackupRecord& resolve_backup(const std::vector<BackupRecord>& backups, const std::string& query,
                                   const std::string& store_url, SystemTime now) {
  if (backups.empty()) {
    throw Error(ErrorKind::kNotFound, "store " + store_url + " holds no backups",
                "check --store, or take one with `etcdadm backup save`");
  }
  if (query.empty())
    throw Error(ErrorKind::kInvalidArgument, "no backup named", "give a backup name, a prefix of one, or 'latest'");
  if (query == "latest") {
    // The newest backup that can be one; what it passes over is said, never hidden.
    for (const auto& r : backups) {
      const std::string why = why_not_latest(r, now);
      if (why.empty()) return r;
      spdlog::warn("latest: skipping backup {}: {}", r.name, why);
    }
    throw Error(ErrorKind::kCorrupt,
                "every backup in " + store_url +
                    " is recorded as damaged, names no data file the store holds, or is dated in the future",
                "`etcdadm backup list --store " + store_url +
                    "` shows why; `etcdadm backup verify NAME` checks one again (and clears the record if it passes)");
  }

  std::vector<const BackupRecord*> prefixed;
  const BackupRecord* match = nullptr;
  for (const auto& r : backups) {
    if (r.name == query) match = &r;
    if (r.name.compare(0, query.size(), query) == 0) prefixed.push_back(&r);
  }
  if (match == nullptr && prefixed.size() == 1) match = prefixed.front();
  if (match != nullptr) {
    // A backup named on purpose is used even when recorded damaged (it is checked again anyway),
    // except one whose metadata cannot be read: nothing could check it.
    if (match->format == kUnreadableFormat) {
      auto next = next_intact_candidate(backups, match->name);
      throw Error(
          ErrorKind::kCorrupt, "backup " + match->name + " in " + store_url + " is damaged: " + match->damage->reason,
          next ? "the next candidate is " + next->name : "no older backup is left that is not known to be damaged");
    }
    if (match->damage) {
      spdlog::warn("backup {} is recorded as damaged ({}); checking it again", match->name, match->damage->reason);
    }
    return *match;
  }
  if (prefixed.size() > 1) {
    std::vector<const BackupRecord*> shown(prefixed.begin(), prefixed.begin() + std::min<size_t>(prefixed.size(), 10));
    throw Error(ErrorKind::kInvalidArgument,
                "'" + query + "' matches " + std::to_string(prefixed.size()) + " backups in " + store_url + ":" +
                    list_names(shown) + (prefixed.size() > shown.size() ? "\n  ..." : ""),
                "give more of the name");
  }

  // No match: name the backups closest in time (when the query parses as a time), else the newest.
  std::vector<const BackupRecord*> nearest;
  for (const auto& r : backups) nearest.push_back(&r);
  std::optional<SystemTime> t = parse_rfc3339(query);
  if (!t) {
    if (auto p = parse_backup_name(query)) t = p->time;
  }
  if (!t && query.size() >= 10) {
    // Accept partial times such as "2026-11-21T10:00" or "2026-11-21" for distance purposes.
    std::string padded = query + std::string("0000-01-01T00:00:00Z").substr(std::min<size_t>(query.size(), 20));
    t = parse_rfc3339(padded);
  }
  if (t) {
    int64_t target = to_unix_micros(*t);
    std::stable_sort(nearest.begin(), nearest.end(), [&](const BackupRecord* a, const BackupRecord* b) {
      return std::llabs(a->taken_at_micros - target) < std::llabs(b->taken_at_micros - target);
    });
  }
  nearest.resize(std::min<size_t>(nearest.size(), 5));
  throw Error(
      ErrorKind::kNotFound,
      "no backup '" + query + "' in " + store_url + "; " + (t ? "nearest in time:" : "newest:") + list_names(nearest),
      "run `etcdadm backup list --store " + store_url + "` and pass one of the names (or 'latest')");
}

BackupRecord find_backup(BlobStore& store, Catalog& catalog, const std::string& query) {
  const SyncStats synced = catalog.sync(store);
  BackupRecord chosen;
  try {
    chosen = resolve_backup(catalog.backups(store.url()), query, store.url());
  } catch (const Error& e) {
    // A backup named before the newest hour (copied in from another store) is found by a full
    // listing only (store-format.md §9).
    if (e.kind() != ErrorKind::kNotFound || synced.full) throw;
    catalog.sync(store, SyncDepth::kFull);
    return resolve_backup(catalog.backups(store.url()), query, store.url());
  }
  // Between full listings the catalog may still hold a backup another host has deleted since
  // (store-format.md §9): one request proves the chosen one is there, and when it is gone, a full
  // listing decides again.
  if (synced.full || chosen.data_file.empty() || store.stat(chosen.name + "/" + chosen.data_file)) return chosen;
  spdlog::info("backup {} is no longer in {}: listing the whole store again", chosen.name, store.url());
  catalog.sync(store, SyncDepth::kFull);
  return resolve_backup(catalog.backups(store.url()), query, store.url());
}

}  // namespace etcdadm

#include "backup/prune.h"

#include <spdlog/spdlog.h>

#include <map>
#include <set>

#include "common/error.h"
#include "store/layout.h"

namespace etcdadm {

namespace {

// Every key of each backup directory, in one listing of the store.
std::map<std::string, std::vector<std::string>> keys_by_directory(BlobStore& store) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& b : store.list("")) {
    auto slash = b.key.find('/');
    if (slash == std::string::npos) continue;  // store-level files (the marker)
    out[b.key.substr(0, slash)].push_back(b.key);
  }
  return out;
}

void delete_backup(BlobStore& store, const BackupListing& backup, const std::vector<std::string>& keys) {
  const std::string& marker = backup.completion_key;
  store.remove(marker);  // first: from here on no reader sees this backup
  std::vector<std::string> rest;
  for (const auto& k : keys) {
    if (k != marker) rest.push_back(k);
  }
  store.remove_many(rest);
}

}  // namespace

PruneResult prune_backups(BlobStore& store, Catalog* catalog, const RetentionPolicy& policy, SystemTime now,
                          bool dry_run) {
  PruneResult r;
  r.dry_run = dry_run;
  std::vector<std::string> names;
  std::map<std::string, BackupListing> listings;
  for (auto& l : scan_backups(store)) {
    names.push_back(l.name);
    listings[l.name] = std::move(l);
  }
  r.plan = plan_retention(names, now, policy);
  for (const auto& u : r.plan.unparseable) spdlog::warn("not pruning {}: its name is not a backup time", u);
  if (dry_run) return r;

  auto dirs = keys_by_directory(store);
  for (const auto& name : r.plan.remove) {
    delete_backup(store, listings.at(name), dirs[name]);
    r.deleted.push_back(name);
    spdlog::info("pruned backup {} ({})", name, policy.describe());
  }
  // Directories whose marker is gone (an interrupted prune) and that are older than the newest
  // backup (so not a save in progress) are finished off.
  std::set<std::string> listed(names.begin(), names.end());
  auto newest = r.plan.keep.empty() ? std::nullopt : parse_backup_name(r.plan.keep.front());
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
  sync_after(catalog, store, "pruning");
  return r;
}

}  // namespace etcdadm

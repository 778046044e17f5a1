#include "restore/damage.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "changelog/segment.h"
#include "common/error.h"
#include "restore/resolve.h"

namespace etcdadm {

std::string etcdadm_on_this_host() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return std::string("etcdadm ") + ETCDADM_VERSION + " on " + host;
}

void record_damage(BlobStore& store, Catalog& catalog, const BackupRecord& b, const std::string& reason) {
  DamageRecord d{to_unix_micros(std::chrono::system_clock::now()), reason, etcdadm_on_this_host(), false};
  if (b.format != kUnreadableFormat) {
    try {
      apply_store_settings(store);  // the marker is readable by whoever may read the backup
      store.write_small(b.name + "/" + kDamageMarkerFile, damage_marker_json(d), /*overwrite=*/true);
      d.in_store = true;
    } catch (const Error& e) {
      spdlog::warn(
          "backup {} is damaged, but the marker could not be written to {} ({}); only this host's catalog "
          "remembers it",
          b.name, store.url(), e.what());
    }
  }
  try {
    catalog.record_damage(store.url(), b, d);
  } catch (const Error& e) {
    spdlog::warn("could not record the damage of backup {} in the catalog: {}", b.name, e.what());
  }
}

void clear_damage(BlobStore& store, Catalog& catalog, const BackupRecord& b) {
  if (!b.damage) return;
  spdlog::info("backup {} passed verification: clearing its damage record ({})", b.name, b.damage->reason);
  try {
    if (b.damage->in_store) store.remove(b.name + "/" + kDamageMarkerFile);
    catalog.clear_damage(store.url(), b.name);
  } catch (const Error& e) {
    spdlog::warn("could not clear the damage record of backup {}: {}", b.name, e.what());
  }
}

std::optional<BackupRecord> next_intact_candidate(const std::vector<BackupRecord>& backups, const std::string& name) {
  bool past = false;
  for (const auto& r : backups) {
    if (past && why_not_latest(r, std::chrono::system_clock::now()).empty()) return r;
    if (r.name == name) past = true;
  }
  return std::nullopt;
}

void with_damage_recorded(BlobStore& store, Catalog& catalog, const BackupRecord& b, const std::function<void()>& work,
                          const CommandForBackup& command_for) {
  try {
    work();
  } catch (const Error& e) {
    // A damaged change log segment says nothing about the snapshot it extends.
    if (e.kind() != ErrorKind::kCorrupt || dynamic_cast<const changelog::SegmentError*>(&e) != nullptr) throw;
    record_damage(store, catalog, b, e.what());
    std::optional<BackupRecord> next;
    try {
      next = next_intact_candidate(catalog.backups(store.url()), b.name);
    } catch (const Error&) {
    }
    std::string hint = "backup " + b.name + " is now recorded as damaged: `latest` skips it from now on. ";
    if (next) {
      hint += "The next candidate is " + next->name +
              (next->revision ? " (revision " + std::to_string(*next->revision) + ")" : "") +
              (command_for ? ": " + command_for(next->name) : "");
    } else {
      hint += "No older backup is left that is not known to be damaged.";
    }
    throw Error(ErrorKind::kCorrupt, e.what(), hint);
  }
}

}  // namespace etcdadm

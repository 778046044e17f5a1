#include "restore/backup_copy.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <vector>

#include "changelog/heartbeat.h"
#include "changelog/segment.h"
#include "common/byte_sink.h"
#include "common/error.h"
#include "common/failpoint.h"
#include "common/interrupt.h"
#include "common/text.h"
#include "restore/damage.h"
#include "restore/fetch.h"
#include "store/blob_capabilities.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::steady_clock;

// A writer that is aborted unless committed: whatever stops a copy, no partial blob stays.
class PendingBlob {
 public:
  PendingBlob(BlobStore& store, const std::string& key) : writer_(store.create(key, /*overwrite=*/true)) {}
  ~PendingBlob() {
    if (!committed_) writer_->abort();
  }
  ByteSink& sink() { return *writer_; }
  void commit() {
    writer_->commit();
    committed_ = true;
  }

 private:
  std::unique_ptr<BlobWriter> writer_;
  bool committed_ = false;
};

std::optional<std::string> read_if_listed(BlobStore& store, const std::map<std::string, BlobInfo>& listed,
                                          const std::string& key) {
  if (!listed.count(key)) return std::nullopt;
  return store.read_small(key);
}

std::map<std::string, BlobInfo> listing_by_key(BlobStore& store, const std::string& prefix) {
  std::map<std::string, BlobInfo> out;
  for (auto& b : store.list(prefix)) out.emplace(b.key, b);
  return out;
}

CopiedBackup copy_one(const BackupStore& source_store, BlobStore& to, const BackupRecord& b,
                      bool& etcdadm_only_allowed) {
  BlobStore& from = *source_store;
  const std::string what = "backup " + b.name;
  if (b.format == kUnreadableFormat || b.data_file.empty()) {
    throw Error(ErrorKind::kCorrupt,
                what + " in " + from.url() + " is damaged (" + (b.damage ? b.damage->reason : "no data file") + ")",
                "copy the others (name them, or --since a later time); this one cannot be copied intact");
  }
  const std::string dir = b.name + "/";
  const std::string data_key = dir + b.data_file, meta_key = dir + kBackupMetaFile, em_key = dir + kEtcdManagerMetaFile;
  auto source = listing_by_key(from, dir);
  auto target = listing_by_key(to, dir);
  const auto source_meta = read_if_listed(from, source, meta_key);
  const auto source_em = read_if_listed(from, source, em_key);
  const auto target_meta = read_if_listed(to, target, meta_key);
  const auto target_em = read_if_listed(to, target, em_key);

  // A complete backup of the same name in the target must be this one (the same stored bytes).
  const bool target_complete = target.count(em_key) || (target_meta && target.count(data_key));
  if (target_complete && source_meta && target_meta && *source_meta != *target_meta) {
    auto s = backup_meta_from_json(*source_meta, from.url() + "/" + meta_key);
    auto t = backup_meta_from_json(*target_meta, to.url() + "/" + meta_key);
    if (s.stored_sha256 != t.stored_sha256) {
      throw Error(ErrorKind::kAlreadyExists,
                  what + ": " + to.url() + " holds a different backup of that name (stored SHA-256 " + t.stored_sha256 +
                      ", the source's " + s.stored_sha256 + ")",
                  "nothing was overwritten; delete it from the target first if the source's is the one to keep");
    }
  }
  // The data is there when the metadata written after it matches and the size is the recorded one.
  auto data_it = target.find(data_key);
  const bool data_present = data_it != target.end() && data_it->second.size == b.stored_size &&
                            (source_meta ? target_meta == source_meta : target_em == source_em);
  const bool meta_present = !source_meta || target_meta == source_meta;
  const bool em_present = !source_em || target_em == source_em;
  CopiedBackup c{b.name, false, 0};
  if (data_present && meta_present && em_present) return c;

  c.copied = true;
  if (!data_present) {
    PendingBlob out(to, data_key);
    FetchResult r = copy_verified(source_store, b, out.sink());
    failpoint("copy/data/written");
    out.commit();
    c.bytes = r.stored_bytes;
    failpoint("copy/data/committed");
  }
  // Our metadata next, etcd-manager's last: until it exists, neither lists a backup that is not whole.
  if (source_meta && !meta_present) {
    if (!source_em && !etcdadm_only_allowed) {
      allow_etcdadm_only_backups(to);  // a layout-1 target learns it holds backups etcd-manager cannot restore
      etcdadm_only_allowed = true;
    }
    to.write_small(meta_key, *source_meta, /*overwrite=*/true);
    failpoint("copy/meta/written");
  }
  if (source_em && !em_present) to.write_small(em_key, *source_em, /*overwrite=*/true);
  return c;
}

// The segments of each copied cluster's log from the oldest copied backup's revision on, then the
// log's heartbeat (read before the listing, so it never claims more than the segments copied).
void copy_change_logs(BlobStore& from, BlobStore& to, const std::vector<BackupRecord>& backups, CopyResult& result) {
  std::map<std::string, int64_t> oldest;  // cluster ID -> lowest revision copied
  for (const auto& b : backups) {
    if (b.cluster_id.empty() || !b.revision) continue;
    auto [it, inserted] = oldest.emplace(b.cluster_id, *b.revision);
    if (!inserted) it->second = std::min(it->second, *b.revision);
  }
  std::vector<uint8_t> buf(1 << 20);
  for (const auto& [cluster, from_revision] : oldest) {
    const std::string heartbeat = changelog::heartbeat_key(cluster);
    std::optional<std::string> heartbeat_text;
    if (from.stat(heartbeat)) heartbeat_text = from.read_small(heartbeat);
    auto present = listing_by_key(to, std::string(changelog::kChangeLogDir) + "/" + cluster + "/");
    size_t copied_here = 0;
    std::vector<changelog::LateWindow> late;
    for (const auto& segment : changelog::list_segments(from, cluster, nullptr, &late)) {
      if (segment.last_revision <= from_revision) continue;
      const std::string key = segment.key();
      if (auto it = present.find(key); it != present.end()) {
        ++result.segments_present;
        continue;
      }
      throw_if_interrupted("copy of " + key);
      auto reader = from.open(key);
      PendingBlob out(to, key);
      HashingSink hashed(&out.sink());
      for (size_t n; (n = reader->read(buf.data(), buf.size())) > 0;) hashed.write(buf.data(), n);
      const std::string sha = to_hex(hashed.finish());
      if (sha != segment.sha256) {
        throw changelog::SegmentError(ErrorKind::kCorrupt,
                                      "change log segment " + from.url() + "/" + key +
                                          " is damaged: its stored bytes hash to " + sha + ", its name says " +
                                          segment.sha256,
                                      "the backups were copied; point-in-time restores from the target reach only "
                                      "revisions before this segment");
      }
      out.commit();
      result.bytes += hashed.bytes();
      ++result.segments_copied;
      ++copied_here;
    }
    // The late-window markers of what was copied (their names are their content), after the
    // segments they describe.
    for (const auto& w : late) {
      if (w.last_revision <= from_revision || present.count(w.key()) > 0) continue;
      to.write_small(w.key(), from.read_small(w.key()), /*overwrite=*/true);
    }
    if (heartbeat_text) to.write_small(heartbeat, *heartbeat_text, /*overwrite=*/true);
    spdlog::info("change log of cluster {}: {} segments copied", cluster, copied_here);
  }
}

}  // namespace

void prepare_copy_target(BlobStore& from, BlobStore& to) {
  auto source = read_store_settings(from);
  auto target = read_store_settings(to);
  if (!target) {
    if (source) {
      // The source's marker as it is: the same layout, compression, file mode and recipients.
      const std::string text = from.read_small(kStoreMarkerFile);
      set_file_mode(to, parse_store_settings(text, from.url() + "/" + kStoreMarkerFile).effective_file_mode());
      to.write_small(kStoreMarkerFile, text);
    } else {
      ensure_store_settings(to, StoreRequest{});  // an etcd-manager store: the defaults
    }
  } else if (source && source->encryption.has_value() != target->encryption.has_value()) {
    throw Error(ErrorKind::kInvalidArgument,
                "cannot copy between " + from.url() + " (" + (source->encryption ? "encrypted" : "not encrypted") +
                    ") and " + to.url() + " (" + (target->encryption ? "encrypted" : "not encrypted") + ")",
                "copy into a new store, which then gets the source's settings, or one encrypted the same way");
  } else if (source && source->encryption && target->encryption &&
             source->encryption->recipient_labels() != target->encryption->recipient_labels()) {
    spdlog::warn("{} is encrypted to {}, {} to {}: copied backups stay encrypted to the source's recipients",
                 from.url(), join_list(source->encryption->recipient_labels()), to.url(),
                 join_list(target->encryption->recipient_labels()));
  }
  apply_store_settings(to);
}

CopyResult copy_backups(const BackupStore& source_store, Catalog* catalog, BlobStore& to,
                        const std::vector<BackupRecord>& backups, bool change_log) {
  BlobStore& from = *source_store;
  InterruptibleWork interruptible;  // a SIGINT/SIGTERM unwinds through PendingBlob: nothing partial stays
  const auto t0 = Clock::now();
  CopyResult result;
  // As a save does: what killed writers left in the target (temp files, multipart uploads) goes
  // once it is a day old (younger ones may be another writer's).
  clean_abandoned(to, std::chrono::hours(24));
  auto settings = read_store_settings(to);
  bool etcdadm_only_allowed = settings && settings->layout_version >= kEncryptedLayoutVersion;
  std::vector<BackupRecord> copied;
  for (const auto& b : backups) {
    throw_if_interrupted("copy of backup " + b.name);
    try {
      CopiedBackup c = copy_one(source_store, to, b, etcdadm_only_allowed);
      result.bytes += c.bytes;
      spdlog::info("backup {}: {}", b.name,
                   c.copied ? "copied (" + human_bytes(c.bytes) + ")" : "already in the target");
      result.backups.push_back(c);
      copied.push_back(b);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCorrupt) throw;
      spdlog::error("backup {} not copied: {}", b.name, e.what());
      if (catalog != nullptr && b.format != kUnreadableFormat) record_damage(from, *catalog, b, e.what());
      result.damaged.push_back(e.what());
    }
  }
  if (change_log) copy_change_logs(from, to, copied, result);
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return result;
}

CopyResult copy_new_backups(const BackupStore& source_store, Catalog& catalog, BlobStore& to) {
  BlobStore& from = *source_store;
  prepare_copy_target(from, to);
  catalog.sync(from);
  catalog.sync(to);
  std::string newest_there;
  for (const auto& b : catalog.backups(to.url())) newest_there = std::max(newest_there, b.name);
  std::vector<BackupRecord> missing;
  for (const auto& b : catalog.backups(from.url())) {  // newest first
    if (b.name > newest_there && !b.damage) missing.push_back(b);
  }
  std::reverse(missing.begin(), missing.end());
  CopyResult r = copy_backups(source_store, &catalog, to, missing);
  sync_after(&catalog, to, "copy");
  return r;
}

}  // namespace etcdadm

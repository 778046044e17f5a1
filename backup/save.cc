#include "backup/save.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <functional>
#include <future>
#include <vector>

#include "backup/member_select.h"
#include "common/async_sink.h"
#include "common/cpu_priority.h"
#include "common/error.h"
#include "common/failpoint.h"
#include "common/fs.h"
#include "common/interrupt.h"
#include "common/progress.h"
#include "store/audience.h"
#include "store/blob_capabilities.h"
#include "store/etcd_manager.h"
#include "store/snapshot_digest.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::steady_clock;

// Writes one backup directory. Feed the raw snapshot into input(); then finish_data() verifies and
// commits the data file, and publish() writes the metadata files. Destroyed before publish()
// returns, it removes whatever it had written: an interrupted backup never shows up.
class BackupDirWriter {
 public:
  // `encrypt_to`: the age recipients of an encrypted store (recipients_for_save), else nullopt.
  // `progress` (may be null) counts the bytes stored as its second count.
  BackupDirWriter(BlobStore& store, const StoreSettings& settings, const std::optional<age::Recipients>& encrypt_to,
                  int level, SystemTime started, Progress* progress)
      : store_(store),
        compression_(settings.compression),
        encrypted_(encrypt_to.has_value()),
        etcdadm_only_allowed_(settings.layout_version >= kEncryptedLayoutVersion) {
    if (encrypt_to) encrypted_to_ = settings.encryption->recipient_labels();
    data_file_ = data_file_name(compression_, encrypted_);
    // Names carry microseconds; a clash means two saves in the same microsecond: take the next one.
    for (int attempt = 0;; ++attempt) {
      name_ = make_backup_name(started + std::chrono::microseconds(attempt));
      if (!store_.list(name_ + "/").empty()) continue;
      try {
        writer_ = store_.create(name_ + "/" + data_file_, /*overwrite=*/false);
        break;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kAlreadyExists || attempt > 100) throw;
      }
    }
    // Two stages on two cores: the receiving thread checks the digest, the worker compresses,
    // hashes the stored bytes and writes. The member streaming the snapshot usually shares this
    // host and sets the pace of the stream, so the worker runs 10 nice levels lower and catches up
    // in the gaps; under CPU contention the backup slows down, not etcd (the stall watchdog only
    // counts time spent waiting for the member). The receiving thread keeps the caller's nice
    // value: slowed down, it would let etcd fill the HTTP/2 window (grpc_window.h). Both run
    // SCHED_BATCH (save_unrecorded). Nice 19 for the worker was no faster and raised peak RSS
    // (bench/docs/save_restore_bench.md).
    // Compress, then encrypt, then hash what is stored: one pass, no plaintext ever stored.
    ByteSink* to_store = writer_.get();
    if (progress != nullptr) {
      progress->set_secondary_label("stored");
      stored_count_ = std::make_unique<SecondaryProgressSink>(to_store, *progress);
      to_store = stored_count_.get();
    }
    stored_ = std::make_unique<HashingSink>(to_store);
    if (encrypt_to) encryptor_ = age::make_encryptor(*encrypt_to, *stored_);
    encoder_ = make_encoder(compression_, level, encryptor_ ? static_cast<ByteSink&>(*encryptor_) : *stored_);
    async_ = std::make_unique<AsyncSink>(*encoder_, 1 << 20, 8, /*worker_nice_increment=*/10);
    digest_ = std::make_unique<SnapshotDigestSink>(async_.get());
  }

  ~BackupDirWriter() {
    if (published_) return;
    digest_.reset();
    async_.reset();  // stops the worker before the sinks it writes to go away
    try {
      writer_->abort();
      for (const auto& key : committed_) store_.remove(key);
    } catch (const std::exception& e) {
      spdlog::warn("cleanup of unfinished backup {} failed: {}", name_, e.what());
    }
  }

  const std::string& name() const { return name_; }
  ByteSink& input() { return *digest_; }

  SnapshotDigest finish_data(const std::string& what, bool allow_missing_trailer) {
    async_->close();
    encoder_->finish();
    if (encryptor_) encryptor_->finish();
    SnapshotDigest d = digest_->finish();
    require_intact_snapshot(d, what, allow_missing_trailer);
    stored_size_ = stored_->bytes();
    stored_sha256_ = to_hex(stored_->finish());
    writer_->commit();
    committed_.push_back(name_ + "/" + data_file_);
    failpoint("save/data/committed");
    return d;
  }

  void publish(BackupMeta& meta, int64_t unix_seconds) {
    meta.name = name_;
    meta.data_file = data_file_;
    meta.compression = compression_;
    meta.encryption = encrypted_ ? kEncryptionAge : kEncryptionNone;
    meta.encrypted_to = encrypted_to_;
    meta.stored_size = stored_size_;
    meta.stored_sha256 = stored_sha256_;
    // The last file is what makes the backup exist: etcd-manager's, where etcd-manager could
    // restore the backup, else our metadata (layouts 2 and 3). etcd-manager wipes the cluster
    // before it downloads a backup, so it must never list one it would fail on.
    auto blocker = etcd_manager_restore_blocker(data_file_, encrypted_, meta.hash_trailer, meta.etcd_version);
    if (blocker && !etcdadm_only_allowed_) allow_etcdadm_only_backups(store_);  // the marker moves to layout 3 once
    std::string meta_key = name_ + "/" + kBackupMetaFile;
    store_.write_small(meta_key, backup_meta_to_json(meta));
    committed_.push_back(meta_key);
    failpoint("save/meta/written");
    if (!blocker) {
      store_.write_small(name_ + "/" + kEtcdManagerMetaFile,
                         etcd_manager_meta_json(meta.etcd_version, unix_seconds, meta.member_count));
    } else if (!encrypted_) {
      spdlog::info("backup {} is not listed to etcd-manager: {}", name_, *blocker);
    }
    published_ = true;
  }

 private:
  BlobStore& store_;
  Compression compression_;
  bool encrypted_;
  bool etcdadm_only_allowed_;  // the store's layout (2 or 3) allows backups without _etcd_backup.meta
  std::vector<std::string> encrypted_to_;
  std::string name_;
  std::string data_file_;
  std::unique_ptr<BlobWriter> writer_;
  std::unique_ptr<SecondaryProgressSink> stored_count_;
  std::unique_ptr<HashingSink> stored_;
  std::unique_ptr<StreamCodec> encryptor_;
  std::unique_ptr<StreamCodec> encoder_;
  std::unique_ptr<AsyncSink> async_;
  std::unique_ptr<SnapshotDigestSink> digest_;
  std::vector<std::string> committed_;
  uint64_t stored_size_ = 0;
  std::string stored_sha256_;
  bool published_ = false;
};

void fill_digest(BackupMeta& meta, const SnapshotDigest& d) {
  meta.db_size = d.db_bytes;
  meta.snapshot_size = d.total_bytes;
  meta.db_sha256 = d.db_sha256;
  meta.hash_trailer = d.has_trailer;
}

int64_t unix_seconds(SystemTime t) { return to_unix_micros(t) / 1000000; }

// The store's settings (creating its marker when new) once its audience is the one this host
// accepts (store/audience.h) and, for an encrypted store, the recipients a backup is encrypted to:
// everything a save must know before it takes a snapshot.
std::pair<StoreSettings, std::optional<age::Recipients>> prepare_store(BlobStore& store, Catalog* catalog,
                                                                       const StoreRequest& request) {
  StoreSettings settings = settings_for_writing(store, catalog, request);
  std::optional<age::Recipients> to;
  if (settings.encryption) to = recipients_for_save(*settings.encryption, request.encryption, store.url());
  return {settings, to};
}

// The member's HashKV at the backup's revision, for drills to compare a restored member with. The
// snapshot holds every revision up to at least `revision` (the revision before the snapshot was
// asked for), so the restored member answers the same at `revision` whatever raced the snapshot.
// Best effort: a member compacted past `revision` meanwhile, or one that does not answer, costs the
// backup nothing but this check (logged; the metadata then has no sourceHashKV).
//
// etcd 3.5+ answers HashKV at exactly its compaction revision from what the compaction recorded
// (the revisions it removed, with the previous compaction's revision: -1 for the first), not from
// the store, and no restored member can answer that: its store is compacted at that revision and
// hashes what is left. Measured on 3.5.35: put, put, delete (revision 4), compact 4; HashKV(4) =
// 1096611026 "compacted at -1", HashKV(latest = 4) = 568644411 "compacted at 4", which is what the
// member restored from a snapshot taken then serves. So an answer that names an older compaction
// than the revision before it shows is such a record, and is not kept.
std::optional<SourceHashKv> source_hash_at(EtcdClient& client, const std::string& endpoint, int64_t revision) {
  try {
    auto r = client.hash_kv(endpoint, revision);
    if (revision > 1 && r.compact_revision() < revision) {
      etcdserverpb::RangeRequest probe;  // the revision before: compacted only if the compaction is at `revision`
      probe.set_key(std::string(1, '\0'));
      probe.set_limit(1);
      probe.set_count_only(true);
      probe.set_revision(revision - 1);
      try {
        client.range(probe);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kInvalidArgument) throw;  // the revision out of range: compacted
        spdlog::info(
            "the backup has no HashKV to check restores against: revision {} is the member's compaction "
            "revision, where etcd answers HashKV from the compaction's record, which a restored member "
            "cannot reproduce",
            revision);
        return std::nullopt;
      }
    }
    return SourceHashKv{revision, r.hash(), r.compact_revision()};
  } catch (const Error& e) {
    spdlog::warn("the backup will have no HashKV to check restores against: HashKV at revision {} on {} failed: {}",
                 revision, endpoint, e.what());
    return std::nullopt;
  }
}

void record_in_catalog(Catalog* catalog, BlobStore& store, const BackupMeta& meta) {
  if (catalog == nullptr) return;
  try {
    catalog->record(store.url(), record_from_meta(meta));
  } catch (const Error& e) {
    // The backup is safely in the store; the index catches up on the next sync.
    spdlog::warn("backup {} saved, but the catalog could not be updated: {}", meta.name, e.what());
  }
}

}  // namespace

namespace {

SaveResult save_unrecorded(EtcdClient& client, BlobStore& store, Catalog* catalog, const SaveOptions& options) {
  InterruptibleWork interruptible;  // SIGINT/SIGTERM unwind through BackupDirWriter, which removes what it wrote
  auto t0 = Clock::now();
  clean_abandoned(store, options.clean_abandoned_after);
  MemberChoice member = choose_member(client, options.preferred_endpoint);
  const auto& before = member.status;
  spdlog::info("taking snapshot from {} (member {}, {}, revision {}, db {} bytes)", member.endpoint,
               id_hex(before.header().member_id()), member.is_leader() ? "leader" : "follower",
               before.header().revision(), before.dbsize());

  BackupMeta meta;
  meta.source = "snapshot";
  meta.endpoint = member.endpoint;
  meta.etcd_version = before.version();
  meta.cluster_id = id_hex(before.header().cluster_id());
  meta.member_id = id_hex(before.header().member_id());
  meta.from_leader = member.is_leader();
  meta.tool_version = std::string("etcdadm ") + ETCDADM_VERSION;
  try {
    auto members = client.member_list();
    meta.member_count = members.members_size();
    for (const auto& m : members.members()) {
      if (m.id() == before.header().member_id()) meta.member_name = m.name();
    }
  } catch (const Error& e) {
    spdlog::warn("cannot list members ({}); the metadata will lack the member count", e.what());
  }

  auto [settings, encrypt_to] = prepare_store(store, catalog, options.store);
  // Before the writer's worker thread exists, so that it inherits the policy too (why: cpu_priority.h).
  ScopedBatchScheduling batch;
  SystemTime started = std::chrono::system_clock::now();
  // Against the member's reported db size: the snapshot is that file, give or take what changes
  // while it streams. Outlives `dir`, whose worker thread counts into it.
  Progress progress("snapshot of " + member.endpoint, ProgressUnit::kBytes, static_cast<uint64_t>(before.dbsize()));
  BackupDirWriter dir(store, settings, encrypt_to, options.compression_level, started, &progress);
  meta.created_at = format_rfc3339_micros(started);

  // The member hashes its keys at the backup's revision while it streams the snapshot: both are
  // reads of the same member, and on a large db the hash takes seconds the save need not wait for.
  auto source_hash =
      std::async(std::launch::async, source_hash_at, std::ref(client), member.endpoint, before.header().revision());
  // The snapshot's revision lies between the revision before the call and the revision once the
  // server has opened its read transaction (first chunk); equal values pin it exactly.
  std::optional<etcdserverpb::StatusResponse> after;
  auto stream = client.snapshot(
      member.endpoint,
      [&](std::string_view blob, uint64_t) {
        if (options.cancel != nullptr && options.cancel->load()) {
          throw Error(ErrorKind::kInterrupted, "backup " + dir.name() + " cancelled (shutting down)");
        }
        if (interrupted()) throw_if_interrupted("backup " + dir.name());
        dir.input().write(reinterpret_cast<const uint8_t*>(blob.data()), blob.size());
        progress.add(blob.size());
        failpoint("save/snapshot/streaming", options.cancel);
      },
      options.stall_timeout,
      [&] {
        try {
          after = client.status(member.endpoint);
        } catch (const Error& e) {
          spdlog::debug("status after snapshot start failed: {}", e.what());
        }
      });
  // Not the server version (that is Status's, above): 3.6+ stream their storage version.
  meta.storage_version = stream.storage_version;
  SnapshotDigest digest = dir.finish_data("snapshot from " + member.endpoint, /*allow_missing_trailer=*/false);
  progress.finish();
  fill_digest(meta, digest);

  meta.revision = before.header().revision();
  meta.revision_exact = after && after->header().revision() == before.header().revision();
  meta.raft_index = (after ? *after : before).raftindex();
  meta.raft_term = (after ? *after : before).raftterm();
  meta.source_hash = source_hash.get();
  meta.duration_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  throw_if_interrupted("backup " + meta.name);
  dir.publish(meta, unix_seconds(started));
  record_in_catalog(catalog, store, meta);
  spdlog::info("backup {} saved: revision {}, db {} bytes, stored {} bytes ({}), {:.2f}s", meta.name, *meta.revision,
               meta.db_size, meta.stored_size, compression_name(meta.compression), meta.duration_seconds);
  return SaveResult{meta, store.url()};
}

// The attempt history must never cost a backup: failures to record are only logged.
void record_attempt(Catalog* catalog, BlobStore& store, AttemptRecord attempt) {
  if (catalog == nullptr) return;
  attempt.finished_micros = to_unix_micros(std::chrono::system_clock::now());
  try {
    catalog->record_attempt(store.url(), attempt);
  } catch (const Error& e) {
    spdlog::warn("could not record the backup attempt in the catalog: {}", e.what());
  }
}

}  // namespace

SaveResult save_backup(EtcdClient& client, BlobStore& store, Catalog* catalog, const SaveOptions& options) {
  AttemptRecord attempt;
  attempt.started_micros = to_unix_micros(std::chrono::system_clock::now());
  attempt.origin = options.attempt_origin;
  try {
    SaveResult r = save_unrecorded(client, store, catalog, options);
    attempt.result = "success";
    attempt.backup_name = r.meta.name;
    record_attempt(catalog, store, attempt);
    return r;
  } catch (const Error& e) {
    attempt.result = "failure";
    attempt.reason = error_kind_name(e.kind());
    attempt.message = e.what();
    record_attempt(catalog, store, attempt);
    throw;
  }
}

SaveResult import_snapshot(const std::string& file, const BackupStore& backups, Catalog* catalog,
                           const ImportOptions& options) {
  BlobStore& store = *backups;
  InterruptibleWork interruptible;
  auto t0 = Clock::now();
  if (!path_exists(file)) throw Error(ErrorKind::kNotFound, "snapshot file " + file + " does not exist");
  auto [settings, encrypt_to] = prepare_store(store, catalog, options.store);
  // Before the writer's worker thread exists, so that it inherits the policy too (why: cpu_priority.h).
  ScopedBatchScheduling batch;
  SystemTime started = std::chrono::system_clock::now();
  std::error_code size_unknown;  // a pipe or FIFO has none: the progress then shows bytes only
  const uint64_t file_bytes = std::filesystem::file_size(file, size_unknown);
  Progress progress("import of " + file, ProgressUnit::kBytes, size_unknown ? 0 : file_bytes);
  BackupDirWriter dir(store, settings, encrypt_to, options.compression_level, started, &progress);
  // A snapshot someone encrypted with `age -r` is decrypted on the way in (then compressed and
  // encrypted to the store's recipients, if any): the store keeps one format.
  std::unique_ptr<StreamCodec> decryptor;
  bool first = true;
  read_file_chunks(file, [&](const uint8_t* data, size_t size) {
    if (interrupted()) throw_if_interrupted("import of " + file);
    if (first) {
      first = false;
      if (age::looks_like_age(std::string_view(reinterpret_cast<const char*>(data), size))) {
        const age::Identities* keys = backups.keys();
        if (keys == nullptr) {
          throw Error(ErrorKind::kAuth, "snapshot file " + file + " is encrypted with age and no key was given",
                      "give its identity with --identity FILE (or ETCDADM_AGE_IDENTITY_FILE), or its passphrase with "
                      "--passphrase-file");
        }
        decryptor = age::make_decryptor(*keys, dir.input());
      }
    }
    (decryptor ? static_cast<ByteSink&>(*decryptor) : dir.input()).write(data, size);
    progress.add(size);
  });
  if (decryptor) {
    try {
      decryptor->finish();
    } catch (const Error& e) {
      throw e.wrap("snapshot file " + file);
    }
  }
  BackupMeta meta;
  meta.source = "import";
  meta.created_at = format_rfc3339_micros(started);
  meta.etcd_version = options.etcd_version;
  meta.tool_version = std::string("etcdadm ") + ETCDADM_VERSION;
  SnapshotDigest digest = dir.finish_data("snapshot file " + file, options.skip_hash_check);
  progress.finish();
  fill_digest(meta, digest);
  meta.duration_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  dir.publish(meta, unix_seconds(started));
  record_in_catalog(catalog, store, meta);
  spdlog::info("imported {} as backup {} ({} bytes stored)", file, meta.name, meta.stored_size);
  return SaveResult{meta, store.url()};
}

}  // namespace etcdadm

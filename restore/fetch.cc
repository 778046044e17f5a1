#include "restore/fetch.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "common/async_sink.h"
#include "common/error.h"
#include "common/failpoint.h"
#include "common/fs.h"
#include "common/interrupt.h"
#include "common/progress.h"
#include "common/retry.h"
#include "common/text.h"
#include "store/encryption.h"

namespace etcdadm {

namespace {

class FileSink : public ByteSink {
 public:
  explicit FileSink(AtomicFile& f) : f_(f) {}
  void write(const uint8_t* d, size_t n) override { f_.write(d, n); }

 private:
  AtomicFile& f_;
};

Error stored_mismatch_error(const std::string& what, const BackupRecord& b, const FetchResult& r) {
  return Error(ErrorKind::kCorrupt,
               what + ": stored data does not match its recorded SHA-256 (recorded " + b.stored_sha256 + ", read " +
                   r.stored_sha256 + ", " + std::to_string(r.stored_bytes) + " of " + std::to_string(b.stored_size) +
                   " bytes)",
               "the backup was modified or damaged in the store; use another backup");
}

// Opens a backup's data file. A store that announces another size for it than the backup's
// metadata (or, for etcd-manager's, the listing) records is asked again; still disagreeing, its
// listing decides. Listed at the recorded size, the store contradicts itself (a proxy or gateway
// answering HEAD wrongly): reading it would end at the announced size and the digest would then
// call an intact backup damaged, so the store is reported as misbehaving (kUnavailable) and nothing
// is read or marked. Listed at the announced size, the object did change size since the backup was
// written: it is read, and its digest tells what it holds.
std::unique_ptr<BlobReader> open_data_file(BlobStore& store, const BackupRecord& b, const std::string& what) {
  const std::string key = b.name + "/" + b.data_file;
  auto reader = store.open(key);
  const RetryPolicy reopen{
      .max_attempts = 4, .base_delay = std::chrono::milliseconds(250), .max_delay = std::chrono::seconds(1)};
  for (int i = 1; i < reopen.max_attempts && !b.stored_size_matches(reader->size()); ++i) {
    spdlog::warn("{}: the store says its data file holds {} bytes, its record says {}; asking again", what,
                 reader->size(), b.stored_size);
    std::this_thread::sleep_for(backoff_delay(reopen, i));
    throw_if_interrupted("reading " + what);
    reader = store.open(key);
  }
  if (b.stored_size_matches(reader->size())) return reader;
  std::optional<uint64_t> listed;
  for (const auto& info : store.list(b.name + "/")) {
    if (info.key == key) listed = info.size;
  }
  if (listed && b.stored_size_matches(*listed)) {
    throw Error(ErrorKind::kUnavailable,
                store.url() + " misbehaves: opening " + key + " it says the object holds " +
                    std::to_string(reader->size()) + " bytes, but it lists it with " + std::to_string(*listed) +
                    ", the size the backup's record has; " + what + " was not read and is not marked damaged",
                "check the store (or the proxy or gateway in front of it), then run the command again");
  }
  return reader;
}

// The record to check an encrypted backup against: its metadata as the store has it now, since
// `backup rekey` (on any host) rewrites the data file and the metadata in place.
BackupRecord current_record(BlobStore& store, const BackupRecord& listed) {
  return listed.encrypted() ? reload_backup_record(store, listed) : listed;
}

// Passes every byte to both sinks (the second may be null).
class TeeSink : public ByteSink {
 public:
  TeeSink(ByteSink* first, ByteSink* second) : first_(first), second_(second) {}
  void write(const uint8_t* data, size_t size) override {
    if (second_ != nullptr) second_->write(data, size);
    if (first_ != nullptr) first_->write(data, size);
  }

 private:
  ByteSink* first_;
  ByteSink* second_;
};

// Reads, hashes and decompresses on this thread; checks the snapshot digest and writes `out` on a
// second one, so that decompression and SHA-256 + disk writes overlap. `stored_copy` (may be null)
// receives the stored bytes as they are read.
FetchResult fetch_into(const BackupStore& backups, const BackupRecord& listed, ByteSink* out,
                       ByteSink* stored_copy = nullptr) {
  BlobStore& store = *backups;
  InterruptibleWork interruptible;  // the caller's AtomicFile / scratch dir removes what was written
  const std::string what = "backup " + listed.name + " in " + store.url();
  if (listed.data_file.empty())
    throw Error(ErrorKind::kCorrupt, what + " has no data file (etcd.backup.gz)", "use another backup");
  const BackupRecord b = current_record(store, listed);
  if (!b.hash_trailer && b.stored_sha256.empty() && b.db_sha256.empty()) {
    // Its metadata says there is no trailer and records no digest: nothing could tell a forged or
    // damaged db from the one that was saved.
    throw Error(ErrorKind::kCorrupt,
                what + " cannot be verified: its metadata records no SHA-256 and says its snapshot has no hash trailer",
                "use another backup; etcdadm records both digests for every backup it writes");
  }
  if (b.encrypted()) require_keys_for(b.recipients(), backups.keys(), what);
  std::string key = b.name + "/" + b.data_file;
  auto reader = open_data_file(store, b, what);

  // stored bytes -> SHA-256 -> [age decryption] -> decompression -> snapshot digest -> out
  SnapshotDigestSink digest(out);
  AsyncSink async(digest);
  auto decoder = make_decoder(b.compression, async);
  std::unique_ptr<StreamCodec> decryptor;
  if (b.encrypted()) decryptor = age::make_decryptor(*backups.keys(), *decoder);
  TeeSink decode_and_copy(decryptor ? static_cast<ByteSink*>(decryptor.get()) : decoder.get(), stored_copy);
  HashingSink stored(&decode_and_copy);

  FetchResult r;
  auto stored_mismatch = [&] { return stored_mismatch_error(what, b, r); };
  std::vector<uint8_t> buf(1 << 20);
  Progress progress("backup " + b.name, ProgressUnit::kBytes, b.stored_size);
  try {
    for (;;) {
      if (interrupted()) throw_if_interrupted("reading " + what);
      size_t n = reader->read(buf.data(), buf.size());
      if (n == 0) break;
      stored.write(buf.data(), n);
      progress.add(n);
      failpoint("fetch/data/streaming");
    }
    progress.finish();
    if (decryptor) decryptor->finish();
    decoder->finish();
    async.close();
  } catch (const Error& e) {
    // kAuth: no key opened the age header, or its MAC failed; a damaged header looks the same.
    if (e.kind() != ErrorKind::kCorrupt && !(e.kind() == ErrorKind::kAuth && b.encrypted())) throw;
    // The decoder noticed first. With a recorded hash, hash the whole blob to name the real cause:
    // the stored bytes changed (bit rot, tampering, truncation) since the backup was written.
    if (!b.stored_sha256.empty()) {
      auto again = store.open(key);
      HashingSink full(nullptr);
      for (;;) {
        size_t n = again->read(buf.data(), buf.size());
        if (n == 0) break;
        full.write(buf.data(), n);
      }
      r.stored_bytes = full.bytes();
      r.stored_sha256 = to_hex(full.finish());
      if (!b.stored_sha256_matches(r.stored_sha256)) throw stored_mismatch();
    }
    if (e.kind() == ErrorKind::kAuth) {
      std::string to = b.recipients().empty() ? std::string("unrecorded recipients") : join_list(b.recipients());
      throw Error(ErrorKind::kAuth,
                  what + " cannot be decrypted with " + describe_keys(backups.keys()) + " (" + e.what() +
                      "); it is encrypted to " + to,
                  "give the identity file (or passphrase) of one of those recipients; nothing was written");
    }
    throw e.wrap(what + " is damaged");
  }

  r.stored_bytes = stored.bytes();
  r.stored_sha256 = to_hex(stored.finish());
  if (!b.stored_sha256_matches(r.stored_sha256)) throw stored_mismatch();
  r.digest = digest.finish();
  require_intact_snapshot(r.digest, what, !b.hash_trailer);
  if (!b.db_sha256.empty() && r.digest.db_sha256 != b.db_sha256) {
    throw Error(ErrorKind::kCorrupt,
                what + ": snapshot SHA-256 " + r.digest.db_sha256 + " differs from the recorded " + b.db_sha256,
                "use another backup");
  }
  return r;
}

}  // namespace

namespace {
FetchResult check_stored_bytes(BlobStore& store, const BackupRecord& listed, ByteSink* copy);
}  // namespace

FetchResult fetch_verified(const BackupStore& store, const BackupRecord& backup, const std::string& output_path,
                           bool overwrite, bool durable) {
  AtomicFile file(output_path, 0600, overwrite, durable);
  FileSink sink(file);
  FetchResult r = fetch_into(store, backup, &sink);
  file.commit();
  return r;
}

FetchResult verify_backup(const BackupStore& store, const BackupRecord& backup) {
  return fetch_into(store, backup, nullptr);
}

FetchResult verify_stored_bytes(BlobStore& store, const BackupRecord& listed) {
  return check_stored_bytes(store, listed, nullptr);
}

FetchResult copy_verified(const BackupStore& store, const BackupRecord& backup, ByteSink& copy) {
  if (!backup.stored_sha256.empty()) return check_stored_bytes(*store, backup, &copy);
  return fetch_into(store, backup, nullptr, &copy);
}

namespace {

FetchResult check_stored_bytes(BlobStore& store, const BackupRecord& listed, ByteSink* copy) {
  InterruptibleWork interruptible;
  const std::string what = "backup " + listed.name + " in " + store.url();
  if (listed.data_file.empty()) throw Error(ErrorKind::kCorrupt, what + " has no data file", "use another backup");
  const BackupRecord b = current_record(store, listed);
  auto reader = open_data_file(store, b, what);
  HashingSink stored(copy);
  std::string head;  // the first bytes, until the age header is complete
  bool header_checked = !b.encrypted();
  std::vector<uint8_t> buf(1 << 20);
  Progress progress("backup " + b.name, ProgressUnit::kBytes, b.stored_size);
  for (;;) {
    if (interrupted()) throw_if_interrupted("reading " + what);
    size_t n = reader->read(buf.data(), buf.size());
    if (n == 0) break;
    stored.write(buf.data(), n);
    progress.add(n);
    if (!header_checked) {
      head.append(reinterpret_cast<const char*>(buf.data()), n);
      try {
        header_checked = age::header_size(head).has_value();
      } catch (const Error& e) {
        throw e.wrap(what + " is damaged");
      }
    }
  }
  progress.finish();
  FetchResult r;
  r.stored_bytes = stored.bytes();
  r.stored_sha256 = to_hex(stored.finish());
  if (!b.stored_sha256_matches(r.stored_sha256)) throw stored_mismatch_error(what, b, r);
  if (!header_checked)
    throw Error(ErrorKind::kCorrupt, what + " is damaged: not a valid age file: it ends inside the header");
  return r;
}

}  // namespace

}  // namespace etcdadm

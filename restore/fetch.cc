#include "restore/fetch.h"

#include <vector>

#include "common/async_sink.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/interrupt.h"

namespace etcdadm {

namespace {

class FileSink : public ByteSink {
 public:
  explicit FileSink(AtomicFile& f) : f_(f) {}
  void write(const uint8_t* d, size_t n) override { f_.write(d, n); }

 private:
  AtomicFile& f_;
};

// Reads, hashes and decompresses on this thread; checks the snapshot digest and writes `out` on a
// second one, so that decompression and SHA-256 + disk writes overlap.
FetchResult fetch_into(BlobStore& store, const BackupRecord& b, ByteSink* out) {
  InterruptibleWork interruptible;  // the caller's AtomicFile / scratch dir removes what was written
  const std::string what = "backup " + b.name + " in " + store.url();
  if (b.data_file.empty()) throw Error(ErrorKind::kCorrupt, what + " has no data file (etcd.backup.gz)", "use another backup");
  std::string key = b.name + "/" + b.data_file;
  auto reader = store.open(key);

  SnapshotDigestSink digest(out);
  AsyncSink async(digest);
  auto decoder = make_decoder(b.compression, async);
  HashingSink stored(decoder.get());

  FetchResult r;
  auto stored_mismatch = [&] {
    return Error(ErrorKind::kCorrupt,
                 what + ": stored data does not match its recorded SHA-256 (recorded " + b.stored_sha256 + ", read " +
                     r.stored_sha256 + ", " + std::to_string(r.stored_bytes) + " of " + std::to_string(b.stored_size) + " bytes)",
                 "the backup was modified or damaged in the store; use another backup");
  };
  std::vector<uint8_t> buf(1 << 20);
  try {
    for (;;) {
      if (interrupted()) throw_if_interrupted("reading " + what);
      size_t n = reader->read(buf.data(), buf.size());
      if (n == 0) break;
      stored.write(buf.data(), n);
    }
    decoder->finish();
    async.close();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt) throw;
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
      if (r.stored_sha256 != b.stored_sha256) throw stored_mismatch();
    }
    throw e.wrap(what + " is damaged");
  }

  r.stored_bytes = stored.bytes();
  r.stored_sha256 = to_hex(stored.finish());
  if (!b.stored_sha256.empty() && r.stored_sha256 != b.stored_sha256) throw stored_mismatch();
  r.digest = digest.finish();
  require_intact_snapshot(r.digest, what, !b.hash_trailer);
  if (!b.db_sha256.empty() && r.digest.db_sha256 != b.db_sha256) {
    throw Error(ErrorKind::kCorrupt, what + ": snapshot SHA-256 " + r.digest.db_sha256 + " differs from the recorded " + b.db_sha256,
                "use another backup");
  }
  return r;
}

}  // namespace

FetchResult fetch_verified(BlobStore& store, const BackupRecord& backup, const std::string& output_path, bool overwrite,
                           bool durable) {
  AtomicFile file(output_path, 0600, overwrite, durable);
  FileSink sink(file);
  FetchResult r = fetch_into(store, backup, &sink);
  file.commit();
  return r;
}

FetchResult verify_backup(BlobStore& store, const BackupRecord& backup) { return fetch_into(store, backup, nullptr); }

}  // namespace etcdadm

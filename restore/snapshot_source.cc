#include "restore/snapshot_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.h"

namespace etcdadm {

namespace {

// The digest fields that need no hashing: the size rule and page 0's bbolt magic. The trailer is
// taken as matching (it is not checked).
SnapshotDigest cheap_digest(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open", path, errno);
  struct stat st {};
  std::array<uint8_t, 20> head{};
  ssize_t got = 0;
  bool ok = ::fstat(fd, &st) == 0;
  if (ok) got = ::pread(fd, head.data(), head.size(), 0);
  int err = errno;
  ::close(fd);
  if (!ok || got < 0) throw_errno("cannot read", path, err);
  if (!S_ISREG(st.st_mode)) throw Error(ErrorKind::kInvalidArgument, path + ": not a regular file");
  SnapshotDigest d;
  d.total_bytes = static_cast<uint64_t>(st.st_size);
  static const uint8_t kMagic[4] = {0xed, 0xda, 0x0c, 0xed};  // after the 16-byte page header
  d.bbolt_magic_ok = got == static_cast<ssize_t>(head.size()) && std::memcmp(head.data() + 16, kMagic, 4) == 0;
  d.has_trailer = d.total_bytes >= 32 && d.total_bytes % 512 == 32;
  d.db_bytes = d.has_trailer ? d.total_bytes - 32 : 0;
  d.trailer_matches = true;
  return d;
}

}  // namespace

SnapshotDigest digest_snapshot_file(const std::string& path) {
  SnapshotDigestSink sink(nullptr);
  read_file_chunks(path, [&](const uint8_t* data, size_t size) { sink.write(data, size); });
  return sink.finish();
}

std::unique_ptr<SnapshotSource> SnapshotSource::open_file(const std::string& path, TrailerCheck check) {
  std::unique_ptr<SnapshotSource> s(new SnapshotSource());
  s->path_ = path;
  const std::string what = "snapshot file " + path;
  if (check == TrailerCheck::kFirst) {
    SnapshotDigest d = digest_snapshot_file(path);
    require_intact_snapshot(d, what, /*allow_missing_trailer=*/true);
    s->trailer_checked_ = d.has_trailer;
    s->db_ = BoltReader::open(path, d.db_bytes);
    return s;
  }
  SnapshotDigest d = cheap_digest(path);
  require_intact_snapshot(d, what, /*allow_missing_trailer=*/true);
  if (check == TrailerCheck::kConcurrent && d.has_trailer) {
    s->trailer_checked_ = true;
    s->trailer_thread_ = std::thread([raw = s.get(), path] {
      try {
        raw->trailer_digest_ = digest_snapshot_file(path);
      } catch (...) {
        raw->trailer_error_ = std::current_exception();
      }
    });
  }
  try {
    s->db_ = BoltReader::open(path, d.db_bytes);
  } catch (...) {
    s->finish_trailer_check();  // a damaged file: the SHA-256 mismatch is the clearer message
    throw;
  }
  return s;
}

std::unique_ptr<SnapshotSource> SnapshotSource::open_backup(const BackupStore& store, const BackupRecord& backup) {
  std::unique_ptr<SnapshotSource> s(new SnapshotSource());
  s->scratch_ = std::make_unique<ScratchDir>("etcdadm-snapshot");
  s->path_ = s->scratch_->path() + "/snapshot.db";
  s->fetched_ = fetch_verified(store, backup, s->path_, /*overwrite=*/false, /*durable=*/false);
  s->trailer_checked_ = true;
  s->db_ = BoltReader::open(s->path_, s->fetched_->digest.db_bytes);
  return s;
}

SnapshotSource::~SnapshotSource() {
  if (trailer_thread_.joinable()) trailer_thread_.join();
  db_.reset();  // closed before the scratch dir goes
}

void SnapshotSource::finish_trailer_check() {
  if (!trailer_thread_.joinable()) return;
  trailer_thread_.join();
  if (trailer_error_) std::rethrow_exception(std::exchange(trailer_error_, nullptr));
  require_intact_snapshot(trailer_digest_, "snapshot file " + path_, /*allow_missing_trailer=*/true);
}

}  // namespace etcdadm

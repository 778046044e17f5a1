#include "restore/log_replay.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "changelog/segment.h"
#include "common/error.h"
#include "common/fs.h"
#include "etcd/datadir/bolt_writer.h"
#include "etcd/datadir/mvcc.h"
#include "restore/native_restore.h"

namespace etcdadm {

namespace {

// A bbolt transaction holds its changes in memory until it commits: bound it. Three batches are
// alive at most (one gathered, one handed over, one being committed).
constexpr uint64_t kBatchBytes = 4u << 20;

}  // namespace

PreparedRecord prepare_record(const changelog::Record& record) {
  PreparedRecord out;
  out.revision = record.revision();
  out.observed_unix_micros = record.observed_unix_micros();
  out.committed_after_unix_micros = record.committed_after_unix_micros();
  out.events = static_cast<uint64_t>(record.events_size());
  out.keys.reserve(static_cast<size_t>(record.events_size()));
  int64_t sub = 0;
  for (const auto& ev : record.events()) {
    const auto& kv = ev.kv();
    if (kv.mod_revision() != record.revision()) {
      out.defect = "change log record " + std::to_string(record.revision()) + " holds an event of revision " +
                   std::to_string(kv.mod_revision());
      out.keys.clear();
      return out;
    }
    std::string key = revision_key(record.revision(), sub++);
    std::string value;
    if (ev.type() == etcdserverpb::Event::DELETE) {
      key.push_back('t');  // etcd's tombstone mark
      etcdserverpb::KeyValue tomb;
      tomb.set_key(kv.key());
      value = tomb.SerializeAsString();
    } else {
      value = kv.SerializeAsString();
    }
    out.bytes += key.size() + value.size();
    out.keys.emplace_back(std::move(key), std::move(value));
  }
  for (const auto& grant : record.leases()) {
    if (grant.granted_ttl() < 0) continue;  // gone before it was asked about
    changelog::StoredLease lease;
    lease.set_id(grant.id());
    lease.set_ttl(grant.granted_ttl());
    out.leases.emplace_back(big_endian_u64(static_cast<uint64_t>(grant.id())), lease.SerializeAsString());
    out.bytes += 32;
  }
  return out;
}

LogReplay::LogReplay(std::string db_path, uint64_t db_bytes, int64_t snapshot_revision)
    : path_(std::move(db_path)), revision_(snapshot_revision), db_bytes_(db_bytes) {
  committer_ = std::thread([this] { commit_loop(); });
}

LogReplay::~LogReplay() { stop_committer(); }

void LogReplay::stop_committer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (committer_.joinable()) committer_.join();
}

void LogReplay::apply(PreparedRecord record) {
  if (record.revision != revision_ + 1) {
    throw Error(ErrorKind::kInternal,
                "replay of revision " + std::to_string(record.revision) + " after " + std::to_string(revision_));
  }
  if (!record.defect.empty()) throw changelog::SegmentError(ErrorKind::kCorrupt, record.defect);
  // Each record's keys follow the last one's: (revision, sub) grows with both.
  for (auto& kv : record.keys) gathering_.keys.push_back(std::move(kv));
  for (auto& lease : record.leases) gathering_.leases.push_back(std::move(lease));
  gathering_.bytes += record.bytes;
  events_ += record.events;
  revision_ = record.revision;
  if (gathering_.bytes >= kBatchBytes) hand_over();
}

void LogReplay::hand_over() {
  std::unique_lock<std::mutex> lock(mu_);
  // One batch waits at most: gathering the next one while two are pending would only hold memory.
  cv_.wait(lock, [&] { return !handed_ || failed_; });
  if (failed_) std::rethrow_exception(failed_);
  handed_ = std::move(gathering_);
  gathering_ = Batch{};
  lock.unlock();
  cv_.notify_all();
}

void LogReplay::commit_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || handed_; });
    if (stop_) return;  // what is still handed over is dropped with the staging file
    Batch batch = std::move(*handed_);
    handed_.reset();
    committing_ = true;
    lock.unlock();
    cv_.notify_all();  // room for the next batch while this one is written
    std::exception_ptr error;
    try {
      commit(batch);
    } catch (...) {
      error = std::current_exception();
    }
    batch = Batch{};  // freed before the next one is taken
    lock.lock();
    committing_ = false;
    if (error && !failed_) failed_ = error;
    if (failed_) handed_.reset();  // nothing after a failed commit is written
    cv_.notify_all();
  }
}

void LogReplay::commit(Batch& batch) {
  // Not synced commit by commit: the file is a staging copy, synced once by finish().
  BoltUpdate update(path_, db_bytes_, BoltSync::kDeferred);
  for (auto& [key, value] : batch.keys) update.append("key", std::move(key), std::move(value));
  for (auto& [id, lease] : batch.leases) update.put("lease", id, lease);
  update.commit();
  db_bytes_ = 0;  // the first commit cut the trailer: the file is the database from now on
}

void LogReplay::finish() {
  if (gathering_.bytes > 0) hand_over();
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return (!handed_ && !committing_) || failed_; });
    if (failed_) std::rethrow_exception(failed_);
  }
  stop_committer();
  int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open", path_, errno);
  const int rc = ::fdatasync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw_errno("cannot sync", path_, err);
}

}  // namespace etcdadm

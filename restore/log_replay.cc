#include "restore/log_replay.h"

#include "changelog/segment.h"
#include "common/error.h"
#include "etcd/datadir/bolt_writer.h"
#include "etcd/datadir/mvcc.h"
#include "restore/native_restore.h"

namespace etcdadm {

namespace {

// A bbolt transaction holds its changes in memory until it commits: bound it.
constexpr uint64_t kBatchBytes = 64u << 20;

}  // namespace

LogReplay::LogReplay(std::string db_path, uint64_t db_bytes, int64_t snapshot_revision)
    : path_(std::move(db_path)), db_bytes_(db_bytes), revision_(snapshot_revision) {}

LogReplay::~LogReplay() = default;

void LogReplay::apply(const changelog::Record& record) {
  if (record.revision() != revision_ + 1) {
    throw Error(ErrorKind::kInternal, "replay of revision " + std::to_string(record.revision()) + " after " +
                                          std::to_string(revision_));
  }
  if (!batch_) batch_ = std::make_unique<BoltUpdate>(path_, db_bytes_);
  int64_t sub = 0;
  for (const auto& ev : record.events()) {
    const auto& kv = ev.kv();
    if (kv.mod_revision() != record.revision()) {
      throw changelog::SegmentError(ErrorKind::kCorrupt, "change log record " + std::to_string(record.revision()) + " holds an event of revision " +
                                           std::to_string(kv.mod_revision()));
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
    batch_bytes_ += key.size() + value.size();
    batch_->put("key", key, value);
  }
  for (const auto& grant : record.leases()) {
    if (grant.granted_ttl() < 0) continue;  // gone before it was asked about
    changelog::StoredLease lease;
    lease.set_id(grant.id());
    lease.set_ttl(grant.granted_ttl());
    batch_->put("lease", big_endian_u64(static_cast<uint64_t>(grant.id())), lease.SerializeAsString());
    batch_bytes_ += 32;
  }
  events_ += static_cast<uint64_t>(record.events_size());
  revision_ = record.revision();
  if (batch_bytes_ >= kBatchBytes) commit_batch();
}

void LogReplay::commit_batch() {
  if (!batch_) return;
  batch_->commit();
  batch_.reset();
  batch_bytes_ = 0;
  db_bytes_ = 0;  // the first commit cut the trailer: the file is the database from now on
}

void LogReplay::finish() { commit_batch(); }

}  // namespace etcdadm

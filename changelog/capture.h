// Capturing the change log (the writing sidecar's `--continuous`): a watch on the whole keyspace
// from a revision on, every revision turned into one Record (its events, in order, and the granted
// TTL of each lease it uses for the first time), records gathered into segments that are cut every
// `segment_interval` or `segment_bytes`, whichever comes first, and written to the store in order.
//
// etcd sends all events of one revision in one WatchResponse (server/storage/mvcc/watcher_group.go
// batches whole revisions; without `fragment` a response is never split), so a revision is complete
// when its response has been read: a segment never splits one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "changelog/segment.h"
#include "etcd/client.h"
#include "store/blob_store.h"

namespace etcdadm::changelog {

struct CaptureOptions {
  std::string cluster_id;  // the log's directory (lower-case hex)
  std::chrono::milliseconds segment_interval{std::chrono::seconds(5)};
  uint64_t segment_bytes = 16u << 20;  // plaintext bytes of records
  Compression compression = Compression::kGzip;
  std::optional<age::Recipients> encrypt_to;
  std::string key_id;  // of those recipients (StoreEncryption::key_id), in each segment's name
  // While nothing is pending, a heartbeat (changelog/heartbeat.h) this often; 0: none. One is
  // also written when the run stops cleanly.
  std::chrono::milliseconds heartbeat_interval{std::chrono::seconds(60)};
  // Signs each segment's name (SegmentName::tag): `etcdadm auto`'s sidecar, with the cluster CA's
  // key; empty: segments go unsigned (`backup sidecar`).
  SegmentTagger segment_tagger;
};

// The log cannot continue from where it was asked to: etcd compacted the revisions in between
// (or the watch skipped revisions). A new snapshot must start a new log.
class LogGap : public Error {
 public:
  LogGap(int64_t wanted, int64_t available, const std::string& why)
      : Error(ErrorKind::kCorrupt, why), wanted_revision(wanted), first_available(available) {}
  int64_t wanted_revision;
  int64_t first_available;  // etcd's compact revision + 1, when known (0 otherwise)
};

// What the capture has done, for metrics (read from any thread).
struct CaptureStats {
  std::atomic<int64_t> segments_written{0};
  std::atomic<int64_t> bytes_written{0};
  std::atomic<int64_t> revisions_written{0};
  std::atomic<int64_t> stored_revision{0};         // the newest revision safely in the store
  std::atomic<int64_t> stored_observed_micros{0};  // when it was received
  std::atomic<int64_t> received_revision{0};       // the newest revision received from etcd
  std::atomic<int64_t> heartbeats_written{0};
};

class Capture {
 public:
  Capture(EtcdClient& client, BlobStore& store, std::string endpoint, CaptureOptions options);
  // Captures from `start_revision` until `stop` becomes true, then writes what it holds and
  // returns the last revision stored (start_revision - 1 when none). Throws LogGap when etcd no
  // longer has `start_revision` (compacted), and the error of a failed segment write or of the
  // watch (the member went away): everything stored before stays valid, and a new run continues
  // from the returned revision + 1 (stats().stored_revision).
  // `complete_until_micros`: when the log up to start_revision - 1 was last known complete (its
  // last record received, a heartbeat, the snapshot taken): every later revision was committed
  // after it. Revisions the cluster had already committed when the run starts are a catch-up:
  // their records carry that bound (Record.committed_after_unix_micros) and, once stored, a
  // LateWindow marker names them (segment.h).
  int64_t run(int64_t start_revision, const std::atomic<bool>& stop, int64_t complete_until_micros = 0);
  const CaptureStats& stats() const { return stats_; }

 private:
  void flush_locked_out(std::unique_lock<std::mutex>& lock);
  // Writes a heartbeat when the log in the store holds the cluster's revision now; failures are
  // logged (a heartbeat only extends what --to-time may target).
  void try_heartbeat();
  // The cluster's revision now, read linearizably (every write acknowledged before the call is <= it).
  int64_t cluster_revision();
  // Writes the late window's marker for what of the catch-up is stored up to `stored_revision`,
  // the last of it received by `received_micros` (once; called after each segment write and when
  // the run ends, under write_mu_). Failures are logged: the records carry the bound either way.
  // `run_ended`: the run stops, so a catch-up stored in part is marked as far as it got.
  void mark_late_stored(int64_t stored_revision, int64_t received_micros, bool run_ended);

  EtcdClient& client_;
  BlobStore& store_;
  std::string endpoint_;
  CaptureOptions options_;
  CaptureStats stats_;
  std::mutex mu_;  // builder_, pending_since_
  std::unique_ptr<SegmentBuilder> builder_;
  std::chrono::steady_clock::time_point pending_since_;
  std::mutex write_mu_;  // one segment write at a time, in revision order
  // The catch-up of this run (late_last_ 0: none) and its lower bound: set at the start of run(),
  // before the watch and the flusher, and only read after; late_marked_ (under write_mu_) once its
  // marker is written.
  int64_t late_first_ = 0, late_last_ = 0, late_after_micros_ = 0;
  bool late_marked_ = false;
};

}  // namespace etcdadm::changelog

#include "changelog/capture.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "changelog/heartbeat.h"
#include "common/timefmt.h"

namespace etcdadm::changelog {

namespace {
using Clock = std::chrono::steady_clock;

int64_t now_micros() { return to_unix_micros(std::chrono::system_clock::now()); }
}  // namespace

Capture::Capture(EtcdClient& client, BlobStore& store, std::string endpoint, CaptureOptions options)
    : client_(client), store_(store), endpoint_(std::move(endpoint)), options_(std::move(options)) {}

// Takes the builder out under `lock` (released while the segment is written, so the watch keeps
// reading) and writes it.
void Capture::flush_locked_out(std::unique_lock<std::mutex>& lock) {
  if (!builder_ || builder_->empty()) return;
  std::unique_ptr<SegmentBuilder> full = std::move(builder_);
  std::lock_guard<std::mutex> writing(write_mu_);  // taken before the lock is released: order kept
  lock.unlock();
  SegmentName written = full->write(store_, options_.cluster_id, options_.key_id, options_.segment_tagger);
  stats_.segments_written += 1;
  stats_.revisions_written += written.last_revision - written.first_revision + 1;
  stats_.bytes_written += static_cast<int64_t>(full->stored_bytes());
  stats_.stored_revision = written.last_revision;
  stats_.stored_observed_micros = written.last_observed_ms * 1000;
  spdlog::debug("change log segment {}..{} written", written.first_revision, written.last_revision);
  // The segment's <ms> is rounded down: a millisecond more bounds its last receipt from above.
  if (late_last_ > 0 && written.first_revision <= late_last_) {
    mark_late_stored(written.last_revision, written.last_observed_ms * 1000 + 999, /*run_ended=*/false);
  }
  lock.lock();
}

int64_t Capture::cluster_revision() {
  etcdserverpb::RangeRequest req;  // linearizable (not serializable): the cluster's revision, not a stale one
  req.set_key(std::string(1, '\0'));
  req.set_limit(1);
  req.set_count_only(true);
  return client_.range(req).header().revision();
}

void Capture::mark_late_stored(int64_t stored_revision, int64_t received_micros, bool run_ended) {
  if (late_last_ == 0 || late_marked_ || stored_revision < late_first_) return;
  // A segment that ends inside the catch-up: the marker waits for the rest, or for the end of the run.
  if (stored_revision < late_last_ && !run_ended) return;
  LateWindow w;
  w.cluster_id = options_.cluster_id;
  w.first_revision = late_first_;
  w.last_revision = std::min(late_last_, stored_revision);
  // Bounds stay bounds in milliseconds: the lower one rounded down, the upper one up.
  w.committed_after_ms = late_after_micros_ / 1000;
  w.received_ms = std::max((received_micros + 999) / 1000, w.committed_after_ms);
  late_marked_ = true;
  try {
    // Its name is its content; the body says the same for a person reading the bucket.
    const nlohmann::json body = {
        {"from", w.first_revision},
        {"to", w.last_revision},
        {"committedAfter", format_rfc3339_micros(from_unix_micros(w.committed_after_ms * 1000))},
        {"receivedBy", format_rfc3339_micros(from_unix_micros(w.received_ms * 1000))}};
    store_.write_small(w.key(), body.dump() + "\n", /*overwrite=*/true);
    spdlog::info(
        "change log: revisions {}..{} were committed while capture was away (after {}, received by {}): "
        "their commit times are known only within that window",
        w.first_revision, w.last_revision, format_rfc3339_micros(from_unix_micros(w.committed_after_ms * 1000)),
        format_rfc3339_micros(from_unix_micros(w.received_ms * 1000)));
  } catch (const std::exception& e) {
    spdlog::warn("change log: could not mark revisions {}..{} as received late: {}", w.first_revision, w.last_revision,
                 e.what());
  }
}

void Capture::try_heartbeat() {
  try {
    Heartbeat hb;
    hb.checked_at_micros = now_micros();  // before the read: every write acknowledged by then is <= its revision
    hb.revision = cluster_revision();
    if (stats_.stored_revision.load() < hb.revision) return;  // records are on their way: a segment follows
    write_heartbeat(store_, options_.cluster_id, hb);
    stats_.heartbeats_written += 1;
    spdlog::debug("change log heartbeat: revision {} at {}", hb.revision,
                  format_rfc3339_micros(from_unix_micros(hb.checked_at_micros)));
  } catch (const std::exception& e) {
    spdlog::warn("change log: no heartbeat this time: {}", e.what());
  }
}

int64_t Capture::run(int64_t start_revision, const std::atomic<bool>& stop, int64_t complete_until_micros) {
  stats_.stored_revision = start_revision - 1;
  late_first_ = late_last_ = late_after_micros_ = 0;
  late_marked_ = false;
  // What the cluster committed before this run could watch it: received in a burst, later than
  // committed. Unknown bound (0): as early as can be, never "received live".
  const int64_t now_revision = cluster_revision();
  if (now_revision >= start_revision) {
    late_first_ = start_revision;
    late_last_ = now_revision;
    late_after_micros_ = std::max<int64_t>(complete_until_micros, 1);
    spdlog::info("change log: the cluster is at revision {}: revisions {}..{} are caught up (committed after {})",
                 now_revision, start_revision, now_revision,
                 format_rfc3339_micros(from_unix_micros(late_after_micros_)));
  } else {
    spdlog::debug("change log: the cluster is at revision {}: live from there", now_revision);
  }
  int64_t expected = start_revision;  // the next revision the log needs
  std::set<int64_t> leases_seen;      // leases whose TTL this run has recorded
  std::exception_ptr flusher_error;
  std::atomic<bool> flusher_failed{false};  // set after flusher_error: reading it then is safe
  std::atomic<bool> finished{false};
  std::mutex cv_mu;
  std::condition_variable cv;

  // Cuts a segment once its oldest record is `segment_interval` old, even when no event follows;
  // while nothing is pending, writes a heartbeat every `heartbeat_interval`.
  std::thread flusher([&] {
    std::unique_lock<std::mutex> wait_lock(cv_mu);
    auto last_heartbeat = Clock::now();
    while (!finished.load()) {
      cv.wait_for(wait_lock, std::chrono::milliseconds(50));
      try {
        std::unique_lock<std::mutex> lock(mu_);
        bool idle = !builder_ || builder_->empty();
        if (!idle && Clock::now() - pending_since_ >= options_.segment_interval) {
          flush_locked_out(lock);
          last_heartbeat = Clock::now();  // nothing to prove until the cluster has been quiet a while
        }
        lock.unlock();
        if (idle && options_.heartbeat_interval.count() > 0 &&
            Clock::now() - last_heartbeat >= options_.heartbeat_interval) {
          try_heartbeat();
          last_heartbeat = Clock::now();
        }
      } catch (...) {
        flusher_error = std::current_exception();
        flusher_failed = true;
        return;
      }
    }
  });
  auto stop_flusher = [&] {
    finished = true;
    cv.notify_all();
    if (flusher.joinable()) flusher.join();
  };

  try {
    client_.watch_all(
        endpoint_, start_revision,
        [&](const etcdserverpb::WatchResponse& resp) {
          // A failed segment write ends the run (progress answers come at least every second).
          if (flusher_failed.load()) std::rethrow_exception(flusher_error);
          if (resp.canceled()) {
            if (resp.compact_revision() != 0) {
              throw LogGap(expected, resp.compact_revision() + 1,
                           "etcd compacted the revisions the change log needs: revision " + std::to_string(expected) +
                               " is gone (compacted up to " + std::to_string(resp.compact_revision()) + ")");
            }
            throw Error(ErrorKind::kUnavailable, "the watch was cancelled by the member: " + resp.cancel_reason());
          }
          const auto& events = resp.events();
          int i = 0;
          while (i < events.size()) {
            Record record;
            int64_t rev = events[i].kv().mod_revision();
            if (rev < expected) {  // already in the log (a resumed watch): never twice
              ++i;
              continue;
            }
            if (rev != expected) {
              throw LogGap(
                  expected, rev,
                  "the watch jumped from revision " + std::to_string(expected - 1) + " to " + std::to_string(rev));
            }
            record.set_revision(rev);
            record.set_observed_unix_micros(now_micros());
            if (rev <= late_last_) record.set_committed_after_unix_micros(late_after_micros_);
            for (; i < events.size() && events[i].kv().mod_revision() == rev; ++i) {
              *record.add_events() = events[i];
              int64_t lease = events[i].type() == etcdserverpb::Event::PUT ? events[i].kv().lease() : 0;
              if (lease != 0 && leases_seen.insert(lease).second) {
                auto* grant = record.add_leases();
                grant->set_id(lease);
                auto ttl = client_.lease_time_to_live(lease);
                // TTL -1: the lease is gone already; its keys' deletions follow in the log.
                grant->set_granted_ttl(ttl.ttl() == -1 ? -1 : ttl.grantedttl());
              }
            }
            std::unique_lock<std::mutex> lock(mu_);
            if (!builder_) {
              builder_ = std::make_unique<SegmentBuilder>(options_.compression, options_.encrypt_to);
              pending_since_ = Clock::now();
            }
            builder_->add(record);
            stats_.received_revision = rev;
            expected = rev + 1;
            if (builder_->plaintext_bytes() >= options_.segment_bytes) flush_locked_out(lock);
          }
          return true;
        },
        stop);
  } catch (...) {
    stop_flusher();
    // What was received is still good: store it, so the next run (or a new snapshot) starts after it.
    try {
      std::unique_lock<std::mutex> lock(mu_);
      flush_locked_out(lock);
    } catch (const std::exception& e) {
      spdlog::warn("change log: the last records could not be written: {}", e.what());
    }
    {
      std::lock_guard<std::mutex> writing(write_mu_);
      // The part of a catch-up that got stored.
      mark_late_stored(stats_.stored_revision.load(), stats_.stored_observed_micros.load() + 999, /*run_ended=*/true);
    }
    throw;
  }
  stop_flusher();
  if (flusher_failed.load()) std::rethrow_exception(flusher_error);
  std::unique_lock<std::mutex> lock(mu_);
  flush_locked_out(lock);
  lock.unlock();
  {
    std::lock_guard<std::mutex> writing(write_mu_);
    // A stop in the middle of a catch-up.
    mark_late_stored(stats_.stored_revision.load(), stats_.stored_observed_micros.load() + 999, /*run_ended=*/true);
  }
  // A clean stop: the log is known complete up to now (when nothing arrived since the last record).
  if (options_.heartbeat_interval.count() > 0) try_heartbeat();
  return stats_.stored_revision.load();
}

}  // namespace etcdadm::changelog

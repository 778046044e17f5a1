// The sidecar's continuous backup (`backup sidecar --continuous`): beside the scheduled snapshots,
// the writing sidecar (the leader's, as for snapshots) keeps the change log (changelog/capture.h)
// going from the newest snapshot on, so that a restore can reach any revision up to a few seconds
// ago.
//
//   - Where it starts: the end of the unbroken log from the newest backup of this cluster in the
//     store (a previous run, or another member's sidecar before a leader change) + 1; the newest
//     backup's revision + 1 when there is no log yet. No overlap and no gap at a hand-over;
//     overlaps from a race are resolved by revision when reading.
//   - Only while its member leads (with leader_only): a follower's loop waits, and a leader that
//     loses leadership stops after storing what it holds.
//   - A gap (etcd compacted what the log needs: the sidecar was down too long) is logged as an
//     error and counted, and unless the store already holds a backup past it (the sidecar's
//     start-up one), a backup that reaches past it is asked for at once (`request_backup`; the
//     sidecar lets a running backup answer when it reaches); the log restarts from that backup.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "changelog/capture.h"
#include "etcd/client.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/encryption.h"
#include "store/layout.h"

namespace etcdadm {

struct ChangeLogLoopOptions {
  std::string member_endpoint;
  bool leader_only = true;
  // Interval and size; the cluster ID, compression and recipients come from the member and the
  // store's marker at each start, as for snapshots.
  changelog::CaptureOptions capture;
  EncryptionRequest writer;          // the passphrase of a passphrase store
  std::chrono::seconds max_rpo{60};  // readiness fails beyond it
  // Which backups the log may start from and which segments carry it on (`etcdadm auto`: attested
  // backups and tagged segments, what its auto-restore replays, so that a backup or a segment a
  // store writer planted neither anchors the log nor makes it skip ahead); unset: every one.
  std::function<bool(const BackupRecord&)> backup_accepted;
  std::function<bool(const changelog::SegmentName&)> segment_accepted;
};

struct ChangeLogLoopStatus {
  bool running = false;  // capturing now (this member writes the log)
  // Not capturing because capture fails (the member is down or unreachable, a gap), as opposed
  // to a follower's loop waiting for leadership: the RPO keeps growing meanwhile.
  bool failing = false;
  int64_t stored_revision = 0;  // the newest revision safely in the store
  int64_t stored_observed_micros = 0;
  int64_t received_revision = 0;
  int64_t segments_written = 0;
  int64_t bytes_written = 0;
  int64_t gaps = 0;
  std::string last_error;
};

class ChangeLogLoop {
 public:
  // `request_backup(why, revision)` asks the sidecar for a backup that reaches `revision` (after a
  // gap: where etcd's history starts again; 1: any backup to start from). `catalog` (may be null)
  // holds this host's audience pin of the store (store/audience.h), checked at each capture start.
  ChangeLogLoop(EtcdClient& client, BlobStore& store, Catalog* catalog, ChangeLogLoopOptions options,
                std::function<void(const std::string& why, int64_t revision)> request_backup);
  ~ChangeLogLoop();
  void start();
  void stop();  // returns once what was received is stored (or its write failed)
  ChangeLogLoopStatus status() const;
  // RPO now: seconds since the newest revision in the store was received, also while capture
  // fails (it keeps growing then); 0 when nothing newer was received; nullopt when this loop does
  // not write the log (a follower's) or has stored nothing yet.
  std::optional<double> rpo_seconds() const;

 private:
  void loop();
  // Where the log continues for the member's cluster (nullopt while the store has no backup of
  // it), and since when it is known complete up to there (every later revision was committed
  // after that): its last record's receipt or the heartbeat, or the backup's time for a log not
  // begun yet.
  struct Continuation {
    int64_t revision = 0;
    int64_t complete_until_micros = 0;
  };
  std::optional<Continuation> start_revision(const std::string& cluster_id);

  EtcdClient& client_;
  BlobStore& store_;
  Catalog* catalog_;
  ChangeLogLoopOptions options_;
  std::function<void(const std::string&, int64_t)> request_backup_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  ChangeLogLoopStatus status_;
  const changelog::CaptureStats* live_ = nullptr;  // the running capture's counters (under mu_)
};

}  // namespace etcdadm

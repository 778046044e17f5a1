// The change log's heartbeat (docs/store-format.md §8.4): while the cluster is quiet, the capturing
// sidecar records now and then that the log in the store holds every revision the cluster had at
// a given time. A segment proves the log complete only up to when its last revision was received;
// without a heartbeat, a `--to-time` after the last write of a quiet cluster could not be told apart
// from a time whose writes were lost, and is refused.
//
// How the proof is made (changelog/capture.cc): at time T the sidecar reads the cluster's revision
// R with a linearizable read (every write acknowledged before T has a revision <= R); when the log
// in the store already holds R, it writes {R, T}. One small object per cluster, overwritten.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "changelog/segment.h"
#include "store/blob_store.h"

namespace etcdadm::changelog {

struct Heartbeat {
  int64_t revision = 0;           // the cluster's revision at checked_at; the log held it then
  int64_t checked_at_micros = 0;  // unix microseconds, taken before the revision was read
};

// changelog/<cluster>/heartbeat.json
std::string heartbeat_key(const std::string& cluster_id);
void write_heartbeat(BlobStore& store, const std::string& cluster_id, const Heartbeat& heartbeat);
// nullopt when there is none; an unreadable one is ignored with a warning (it only ever extends
// what --to-time may target, never what a restore contains).
std::optional<Heartbeat> read_heartbeat(BlobStore& store, const std::string& cluster_id);

// Where a running capture of `cluster_id`'s log stands: the highest revision the log in the store
// holds, received (a segment's last revision) or proven (the heartbeat) within `max_age` before
// `now_micros`; 0 when nothing in it is that recent (no capture runs: there is nothing to keep whole)
// or the store does not exist yet.
// A capture writes a segment or a heartbeat far more often than this; older means it stopped.
inline constexpr std::chrono::minutes kLiveCaptureWindow{15};
int64_t live_capture_revision(BlobStore& store, const std::string& cluster_id, int64_t now_micros,
                              std::chrono::seconds max_age = kLiveCaptureWindow);

// Until when (unix microseconds) `chain` is known to hold every revision the cluster had: when its
// last revision was received, or the heartbeat's time when the heartbeat's revision is in the chain.
// A last revision inside one of `late` (segment.h LateWindow) was received in a catch-up, which
// proves nothing of when: the window's lower bound stands for its receipt then.
int64_t complete_until_micros(const LogChain& chain, const std::optional<Heartbeat>& heartbeat,
                              const std::vector<LateWindow>& late = {});

}  // namespace etcdadm::changelog

#include "changelog/heartbeat.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/timefmt.h"

namespace etcdadm::changelog {

namespace {
constexpr const char* kHeartbeatFormat = "etcdadm-changelog-heartbeat-v1";
}

std::string heartbeat_key(const std::string& cluster_id) {
  return std::string(kChangeLogDir) + "/" + cluster_id + "/" + kHeartbeatFile;
}

void write_heartbeat(BlobStore& store, const std::string& cluster_id, const Heartbeat& heartbeat) {
  nlohmann::json j{{"format", kHeartbeatFormat},
                   {"revision", heartbeat.revision},
                   {"checkedAt", format_rfc3339_micros(from_unix_micros(heartbeat.checked_at_micros))},
                   {"checkedAtMicros", heartbeat.checked_at_micros}};
  std::string body = j.dump() + "\n";
  auto writer = store.create(heartbeat_key(cluster_id), /*overwrite=*/true);
  writer->write(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  writer->commit();
}

std::optional<Heartbeat> read_heartbeat(BlobStore& store, const std::string& cluster_id) {
  std::string body;
  try {
    body = store.read_small(heartbeat_key(cluster_id), 64 * 1024);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound) return std::nullopt;
    throw;
  }
  try {
    auto j = nlohmann::json::parse(body);
    if (j.value("format", "") != kHeartbeatFormat)
      throw std::runtime_error("format is not " + std::string(kHeartbeatFormat));
    Heartbeat h;
    h.revision = j.at("revision").get<int64_t>();
    h.checked_at_micros = j.at("checkedAtMicros").get<int64_t>();
    if (h.revision <= 0 || h.checked_at_micros <= 0) throw std::runtime_error("revision and time must be positive");
    return h;
  } catch (const std::exception& e) {
    spdlog::warn("ignoring the change log heartbeat {} in {}: {}", heartbeat_key(cluster_id), store.url(), e.what());
    return std::nullopt;
  }
}

int64_t live_capture_revision(BlobStore& store, const std::string& cluster_id, int64_t now_micros,
                              std::chrono::seconds max_age) {
  const int64_t since_micros = now_micros - std::chrono::duration_cast<std::chrono::microseconds>(max_age).count();
  int64_t out = 0;
  std::vector<SegmentName> segments;
  try {
    segments = list_segments(store, cluster_id);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kNotFound) throw;
    return 0;  // a store not written yet holds no log
  }
  for (const auto& s : segments) {
    if (s.last_observed_ms * 1000 >= since_micros) out = std::max(out, s.last_revision);
  }
  if (auto h = read_heartbeat(store, cluster_id); h && h->checked_at_micros >= since_micros)
    out = std::max(out, h->revision);
  return out;
}

int64_t complete_until_micros(const LogChain& chain, const std::optional<Heartbeat>& heartbeat,
                              const std::vector<LateWindow>& late) {
  int64_t until = chain.reaches_observed_ms * 1000;
  for (const auto& w : late) {
    if (w.first_revision <= chain.reaches && chain.reaches <= w.last_revision) until = w.committed_after_ms * 1000;
  }
  // A heartbeat whose revision the chain holds proves the cluster had nothing newer at its time (a
  // cluster quiet since the snapshot too). One below the snapshot's revision predates the snapshot
  // (revisions only grow) and proves nothing about this chain.
  if (heartbeat && heartbeat->revision >= chain.from_revision && heartbeat->revision <= chain.reaches) {
    until = std::max(until, heartbeat->checked_at_micros);
  }
  return until;
}

}  // namespace etcdadm::changelog

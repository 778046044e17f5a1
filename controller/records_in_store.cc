// The controllers' records read from and written to a store (controller/records.h): each read
// parses with the record's own checks (records.cc), so what a store holds never commands a host
// unchecked.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"
#include "controller/records.h"

namespace etcdadm {

std::optional<AutoSpec> read_auto_spec(BlobStore& store) {
  if (!store.stat(kAutoSpecKey)) return std::nullopt;
  return parse_auto_spec(store.read_small(kAutoSpecKey, 64 << 10), store.url() + "/" + kAutoSpecKey);
}

void write_auto_spec(BlobStore& store, const AutoSpec& spec) {
  store.write_small(kAutoSpecKey, auto_spec_json(spec), /*overwrite=*/true);
}

std::vector<HostRecord> read_host_records(BlobStore& store, std::vector<std::string>* unreadable) {
  std::vector<HostRecord> out;
  for (const auto& blob : store.list(kAutoHostsPrefix)) {
    const std::string leaf = blob.key.substr(std::string(kAutoHostsPrefix).size());
    if (leaf.size() < 6 || leaf.compare(leaf.size() - 5, 5, ".json") != 0 || leaf.find('/') != std::string::npos)
      continue;
    try {
      HostRecord h = parse_host_record(store.read_small(blob.key, 64 << 10), store.url() + "/" + blob.key);
      if (host_record_key(h.name) != blob.key) {
        throw Error(ErrorKind::kCorrupt, blob.key + " names host " + h.name + ": a record lies about whose it is");
      }
      out.push_back(std::move(h));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kNotFound) continue;  // deregistered while listing
      if (e.kind() != ErrorKind::kCorrupt) throw;
      if (unreadable != nullptr) unreadable->push_back(e.what());
    }
  }
  return out;
}

MaintenanceRecord read_maintenance(BlobStore& store) {
  std::string text;
  try {
    text = store.read_small(kAutoMaintenanceKey, 1 << 20);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound) return {};
    throw;
  }
  return parse_maintenance_record(text, store.url() + "/" + kAutoMaintenanceKey);
}

void write_maintenance(BlobStore& store, const MaintenanceRecord& record) {
  store.write_small(kAutoMaintenanceKey, maintenance_record_json(record), /*overwrite=*/true);
}

std::optional<PauseRecord> read_pause(BlobStore& store) {
  std::string text;
  try {
    text = store.read_small(kAutoPauseKey, 64 << 10);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound) return std::nullopt;
    throw;
  }
  try {
    return parse_pause_record(text, store.url() + "/" + kAutoPauseKey);
  } catch (const Error& e) {
    // Whatever it says, a pause file is there: someone meant to stop the controllers.
    return PauseRecord{"?", std::string("unreadable pause file (") + e.what() + ")", 0};
  }
}

void append_auto_event(BlobStore& store, const AutoEvent& event) {
  try {
    store.write_small(auto_event_key(event), auto_event_json(event), /*overwrite=*/true);
  } catch (const Error& e) {
    spdlog::warn("could not record the event in {}: {}", store.url(), e.what());
  }
}

std::vector<AutoEvent> read_auto_events(BlobStore& store, size_t limit) {
  auto blobs = store.list(kAutoEventsPrefix);
  if (blobs.size() > limit) blobs.erase(blobs.begin(), blobs.end() - static_cast<std::ptrdiff_t>(limit));
  std::vector<AutoEvent> out;
  for (const auto& b : blobs) {
    try {
      out.push_back(parse_auto_event(store.read_small(b.key, 64 << 10), store.url() + "/" + b.key));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCorrupt && e.kind() != ErrorKind::kNotFound) throw;
      spdlog::warn("skipping event {}: {}", b.key, e.what());
    }
  }
  return out;
}

void trim_auto_events(BlobStore& store, size_t keep) {
  auto blobs = store.list(kAutoEventsPrefix);
  if (blobs.size() <= keep) return;
  std::vector<std::string> doomed;
  for (size_t i = 0; i + keep < blobs.size(); ++i) doomed.push_back(blobs[i].key);
  store.remove_many(doomed);
}

}  // namespace etcdadm

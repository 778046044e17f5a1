// The controllers' records read from and written to a store (controller/records.h): each read
// parses with the record's own checks (records.cc), so what a store holds never commands a host
// unchecked.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"
#include "controller/records.h"

namespace etcdadm {

namespace {

// The record at `key`, nullopt when there is none.
std::optional<std::string> read_if_present(BlobStore& store, const std::string& key, size_t limit) {
  try {
    return store.read_small(key, limit);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound) return std::nullopt;
    throw;
  }
}

}  // namespace

std::optional<AutoSpec> read_auto_spec(BlobStore& store, const RecordPolicy* policy) {
  if (!store.stat(kAutoSpecKey)) return std::nullopt;
  const std::string text = store.read_small(kAutoSpecKey, 64 << 10);
  if (policy != nullptr) policy->require(kAutoSpecKey, text);
  return parse_auto_spec(text, store.url() + "/" + kAutoSpecKey);
}

void write_auto_spec(BlobStore& store, const AutoSpec& spec, const RecordKeyring& keyring) {
  store.write_small(kAutoSpecKey, keyring.sign(kAutoSpecKey, auto_spec_json(spec)), /*overwrite=*/true);
}

std::vector<HostRecord> read_host_records(BlobStore& store, std::vector<std::string>* unreadable,
                                          const RecordPolicy* policy) {
  std::vector<HostRecord> out;
  for (const auto& blob : store.list(kAutoHostsPrefix)) {
    const std::string leaf = blob.key.substr(std::string(kAutoHostsPrefix).size());
    if (leaf.size() < 6 || leaf.compare(leaf.size() - 5, 5, ".json") != 0 || leaf.find('/') != std::string::npos)
      continue;
    try {
      const std::string text = store.read_small(blob.key, 64 << 10);
      if (policy != nullptr) policy->require(blob.key, text);
      HostRecord h = parse_host_record(text, store.url() + "/" + blob.key);
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

MaintenanceRecord read_maintenance(BlobStore& store, const RecordPolicy* policy) {
  const auto text = read_if_present(store, kAutoMaintenanceKey, 1 << 20);
  if (!text) return {};
  if (policy != nullptr) policy->require(kAutoMaintenanceKey, *text);
  return parse_maintenance_record(*text, store.url() + "/" + kAutoMaintenanceKey);
}

void write_maintenance(BlobStore& store, const MaintenanceRecord& record, const RecordKeyring& keyring) {
  store.write_small(kAutoMaintenanceKey, keyring.sign(kAutoMaintenanceKey, maintenance_record_json(record)),
                    /*overwrite=*/true);
}

std::optional<PauseRecord> read_pause(BlobStore& store) {
  const auto text = read_if_present(store, kAutoPauseKey, 64 << 10);
  if (!text) return std::nullopt;
  try {
    return parse_pause_record(*text, store.url() + "/" + kAutoPauseKey);
  } catch (const Error& e) {
    // Whatever it says, a pause file is there: someone meant to stop the controllers.
    return PauseRecord{"?", std::string("unreadable pause file (") + e.what() + ")", 0};
  }
}

std::optional<RestoreApproval> read_restore_approval(BlobStore& store, const std::string& command_key,
                                                     const RecordPolicy* policy) {
  const std::string key = restore_approval_key(command_key);
  const auto text = read_if_present(store, key, 64 << 10);
  if (!text) return std::nullopt;
  if (policy != nullptr) policy->require(key, *text);
  return parse_restore_approval(*text, store.url() + "/" + key);
}

void write_restore_approval(BlobStore& store, const RestoreApproval& approval, const RecordKeyring& keyring) {
  const std::string key = restore_approval_key(approval.command_key);
  store.write_small(key, keyring.sign(key, restore_approval_json(approval)), /*overwrite=*/true);
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

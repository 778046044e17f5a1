#include "store/blob_capabilities.h"

#include <spdlog/spdlog.h>

#include "common/error.h"

namespace etcdadm {

void clean_abandoned(BlobStore& store, std::chrono::seconds older_than) {
  auto* leftovers = capability<LeftoverUploads>(store);
  if (leftovers == nullptr || older_than.count() <= 0) return;
  try {
    for (const auto& what : leftovers->remove_abandoned(older_than))
      spdlog::info("removed {} (left by an earlier save or copy that died)", what);
  } catch (const Error& e) {
    spdlog::warn("could not clean up abandoned uploads in {}: {}", store.url(), e.what());
  }
}

VersionedBlobs::Purge purge_noncurrent_versions(BlobStore& store, const std::string& prefix) {
  auto* versioned = capability<VersionedBlobs>(store);
  return versioned ? versioned->purge_noncurrent_versions(prefix) : VersionedBlobs::Purge{};
}

std::optional<BlobLocks::Lock> lock_of(BlobStore& store, const std::string& key) {
  auto* locks = capability<BlobLocks>(store);
  return locks ? locks->lock_of(key) : std::nullopt;
}

void set_file_mode(BlobStore& store, uint32_t file_mode) {
  if (auto* modes = capability<FileModes>(store)) modes->set_file_mode(file_mode);
}

std::vector<std::string> access_findings(BlobStore& store, uint32_t file_mode) {
  auto* modes = capability<FileModes>(store);
  return modes ? modes->access_findings(file_mode) : std::vector<std::string>{};
}

void reload_credentials(BlobStore& store) {
  if (auto* credentials = capability<ReloadableCredentials>(store)) credentials->reload_credentials();
}

}  // namespace etcdadm

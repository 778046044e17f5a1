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

void never_make_again(BlobStore& store) {
  if (auto* made = capability<MadeOnFirstWrite>(store)) made->never_make_again();
}

std::vector<std::string> access_findings(BlobStore& store, uint32_t file_mode) {
  auto* modes = capability<FileModes>(store);
  return modes ? modes->access_findings(file_mode) : std::vector<std::string>{};
}

void reload_credentials(BlobStore& store) {
  if (auto* credentials = capability<ReloadableCredentials>(store)) credentials->reload_credentials();
}

namespace {

// Tries the conditions once; the reason they are not enforced, nullopt when they are.
std::optional<std::string> conditions_ignored(BlobStore& store, ConditionalWrites& conditional,
                                              const std::string& key) {
  store.remove(key);  // a probe an earlier run left
  auto first = conditional.write_if(key, "etcdadm probe 1", "");
  if (!first) return "a create-if-absent of " + key + ", which does not exist, was refused";
  std::optional<std::string> why;
  if (conditional.write_if(key, "etcdadm probe 2", "")) {
    why =
        "a second create-if-absent of " + key + " replaced the first (If-None-Match: * or ifGenerationMatch=0 ignored)";
  } else if (auto second = conditional.write_if(key, "etcdadm probe 3", *first); !second) {
    why = "a write against the current version of " + key + " was refused";
  } else if (conditional.write_if(key, "etcdadm probe 4", *first)) {
    why = "a write against a version of " + key +
          " that was no longer current succeeded (If-Match or ifGenerationMatch ignored)";
  }
  store.remove(key);
  return why;
}

}  // namespace

ConditionalWrites& conditional_writes(BlobStore& store, const std::string& purpose, const std::string& probe_key) {
  const std::string hint =
      "use a store on AWS S3 (or MinIO RELEASE.2025-09-07 or later), GCS, Azure Blob or a local/shared filesystem for "
      "the "
      "controllers, or create the cluster by hand (etcdadm init / join)";
  if (auto* conditional = capability<ConditionalWrites>(store)) {
    std::optional<std::string> why;
    try {
      why = conditions_ignored(store, *conditional, probe_key);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidArgument) throw;
      why = e.what();  // the server refused the conditional request itself (501)
    }
    if (why) {
      throw Error(ErrorKind::kInvalidArgument,
                  purpose + " needs a store that enforces conditional writes; " + store.url() + " does not: " + *why,
                  hint);
    }
    return *conditional;
  }
  const std::string url = store.url();
  const std::string why =
      url.rfind("swift://", 0) == 0
          ? "Swift has no compare-and-swap (it takes If-None-Match: * only, and each replica decides alone)"
          : "its backend has no conditional writes";
  throw Error(ErrorKind::kInvalidArgument,
              purpose + " needs a store with conditional writes; " + url + " cannot: " + why, hint);
}

}  // namespace etcdadm

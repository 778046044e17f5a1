// The GCS backend of the blob store: gs://bucket/prefix, over the JSON API.
//
// Writes stream: an object smaller than one chunk goes up in a single request; a larger one opens
// a resumable session and sends `chunk_size` pieces (a multiple of 256 KiB) as they fill, so memory
// holds one chunk whatever the object size. Nothing is visible under the key until the last chunk
// is accepted; an aborted writer cancels its session (an abandoned session expires by itself and
// never becomes an object). "No overwrite" is enforced by the server (ifGenerationMatch=0).
// Reads stream through StreamingReader, pinned to the generation seen at open.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/environment.h"
#include "store/backend/gcs/gcs_client.h"
#include "store/blob_capabilities.h"
#include "store/store_options.h"

namespace etcdadm {

class GcsStore : public BlobStore,
                 public VersionedBlobs,
                 public BlobLocks,
                 public ReloadableCredentials,
                 public ConditionalWrites {
 public:
  GcsStore(std::shared_ptr<GcsClient> client, std::string bucket, std::string prefix, size_t chunk_size = 8u << 20);

  std::string url() const override;
  std::unique_ptr<BlobWriter> create(const std::string& key, bool overwrite) override;
  std::unique_ptr<BlobReader> open(const std::string& key) override;
  std::string read_small(const std::string& key, size_t limit = 16 * 1024 * 1024) override;
  std::optional<BlobInfo> stat(const std::string& key) override;
  std::optional<Lock> lock_of(const std::string& key) override;
  std::vector<BlobInfo> list(const std::string& prefix) override;
  std::vector<BlobInfo> list_range(const std::string& start_after, const std::string& end_before) override;
  void remove(const std::string& key) override;
  Purge purge_noncurrent_versions(const std::string& prefix) override;
  void reload_credentials() override;
  std::optional<Versioned> read_versioned(const std::string& key, size_t limit) override;
  std::optional<std::string> write_if(const std::string& key, const std::string& contents,
                                      const std::string& expected) override;
  // How reload_credentials() builds fresh credentials (set by open_gcs_store).
  void set_auth_factory(std::function<std::shared_ptr<GcsAuth>()> factory) { auth_factory_ = std::move(factory); }

  std::string object_name(const std::string& key) const;

 private:
  std::shared_ptr<GcsClient> client_;
  std::string bucket_;
  ObjectKeys keys_;
  size_t chunk_size_;
  std::function<std::shared_ptr<GcsAuth>()> auth_factory_;
};

// Endpoint: flag, then STORAGE_EMULATOR_HOST (http:// added when it has no scheme), then Google.
GcsConfig resolve_gcs_config(const GcsSettings& settings, const Environment& env,
                             const ObjectStoreSettings& object = {});

std::unique_ptr<GcsStore> open_gcs_store(const std::string& bucket, const std::string& prefix,
                                         const GcsSettings& settings, const ObjectStoreSettings& object,
                                         const Environment& env);

}  // namespace etcdadm

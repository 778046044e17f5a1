// The Azure Blob Storage backend of the blob store: azureblob://container/prefix (the scheme kops
// and etcd-manager use).
//
// Writes stream: bytes fill a block buffer; the first full block starts staging blocks (Put
// Block), `concurrency` at a time, so memory stays at (concurrency + 1) blocks whatever the blob
// size; commit() makes them the blob in one Put Block List. Nothing is visible under the key until
// then: staged blocks of a writer that dies are never committed, and Azure discards them after a
// week. A blob smaller than one block goes up in a single Put Blob. Without `overwrite`, the
// write that makes the blob visible carries If-None-Match: *, so an existing blob is never
// replaced. Reads stream one GET, resumed with a Range request pinned to the blob's ETag.
#pragma once

#include <memory>
#include <string>

#include "common/environment.h"
#include "store/backend/azure/azure_auth.h"
#include "store/backend/azure/azure_client.h"
#include "store/blob_capabilities.h"

namespace etcdadm {

class AzureStore : public BlobStore, public ReloadableCredentials, public ConditionalWrites {
 public:
  AzureStore(std::shared_ptr<AzureClient> client, std::string container, std::string prefix,
             size_t block_size = 8u << 20, int concurrency = 4);

  std::string url() const override;
  std::unique_ptr<BlobWriter> create(const std::string& key, bool overwrite) override;
  std::unique_ptr<BlobReader> open(const std::string& key) override;
  std::optional<BlobInfo> stat(const std::string& key) override;
  std::vector<BlobInfo> list(const std::string& prefix) override;
  void remove(const std::string& key) override;
  void reload_credentials() override { client_->reload_credentials(); }
  std::optional<Versioned> read_versioned(const std::string& key, size_t limit) override;
  std::optional<std::string> write_if(const std::string& key, const std::string& contents,
                                      const std::string& expected) override;

  AzureClient& client() { return *client_; }
  const std::string& container() const { return container_; }
  std::string blob_name(const std::string& key) const { return keys_.object(key); }

 private:
  std::shared_ptr<AzureClient> client_;
  std::string container_;
  ObjectKeys keys_;
  size_t block_size_;
  int concurrency_;
};

// Azure allows 50,000 blocks per blob: with 8 MiB blocks, 390 GiB.
inline constexpr int kAzureMaxBlocks = 50000;

std::unique_ptr<AzureStore> open_azure_store(const std::string& container, const std::string& prefix,
                                             const AzureSettings& settings, const ObjectStoreSettings& object,
                                             const Environment& env);

}  // namespace etcdadm

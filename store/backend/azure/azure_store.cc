#include "store/backend/azure/azure_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"
#include "common/failpoint.h"
#include "store/backend/object/parted_writer.h"
#include "store/backend/object/streaming_reader.h"

namespace etcdadm {

namespace {

// Staged blocks of one size, committed by a block list. Uncommitted blocks are invisible and
// Azure discards them by itself, so an abandoned upload needs no cleanup.
class AzureUpload : public PartedUpload {
 public:
  AzureUpload(std::shared_ptr<AzureClient> client, std::string container, std::string blob, size_t block_size,
              bool create_only)
      : client_(std::move(client)),
        container_(std::move(container)),
        blob_(std::move(blob)),
        block_size_(block_size),
        create_only_(create_only) {}

  std::string where() const override { return "azureblob://" + container_ + "/" + blob_; }
  size_t part_size(int) const override { return block_size_; }
  int max_parts() const override { return kAzureMaxBlocks; }
  void put_whole(std::string_view data) override { client_->put_blob(container_, blob_, data, create_only_); }
  void begin() override {}
  std::string put_part(int number, const std::string& data) override {
    std::string id = azure_block_id(number);
    client_->put_block(container_, blob_, id, data);
    failpoint("azure/block/staged");
    return id;
  }
  void complete(const std::vector<std::string>& block_ids, const std::vector<uint64_t>&) override {
    client_->put_block_list(container_, blob_, block_ids, create_only_);
  }
  void abandon(int) override {}

 private:
  std::shared_ptr<AzureClient> client_;  // shared: a writer may outlive its store object
  std::string container_, blob_;
  size_t block_size_;
  bool create_only_;  // If-None-Match: * on the block list that makes the blob visible
};

}  // namespace

AzureStore::AzureStore(std::shared_ptr<AzureClient> client, std::string container, std::string prefix,
                       size_t block_size, int concurrency)
    : client_(std::move(client)),
      container_(std::move(container)),
      keys_{std::move(prefix)},
      block_size_(std::clamp<size_t>(block_size, 1u << 20, size_t{4000} << 20)),
      concurrency_(std::max(1, concurrency)) {}

std::string AzureStore::url() const {
  std::string u = "azureblob://" + container_ + (keys_.root.empty() ? "" : "/" + keys_.root);
  // The account is part of the store's identity: two accounts can have containers of one name.
  return u + "?endpoint=" + client_->config().endpoint;
}

std::unique_ptr<BlobWriter> AzureStore::create(const std::string& key, bool overwrite) {
  // The commit carries If-None-Match: * as well; checking here fails fast, before a large upload.
  if (!overwrite && client_->get_properties(container_, blob_name(key))) {
    throw Error(ErrorKind::kAlreadyExists, url() + ": " + key + " already exists");
  }
  return std::make_unique<PartedWriter>(
      std::make_unique<AzureUpload>(client_, container_, blob_name(key), block_size_, /*create_only=*/!overwrite),
      concurrency_);
}

std::unique_ptr<BlobReader> AzureStore::open(const std::string& key) {
  std::string blob = blob_name(key);
  auto info = client_->get_properties(container_, blob);
  if (!info) throw Error(ErrorKind::kNotFound, url() + ": " + key + " does not exist");
  std::shared_ptr<AzureClient> client = client_;
  return std::make_unique<StreamingReader>(
      "azureblob://" + container_ + "/" + blob, info->size, client_->config().retry,
      [client, container = container_, blob, etag = info->etag](uint64_t offset, const HttpBodySink& sink) {
        client->get_blob(container, blob, offset, etag, sink);
      });
}

std::optional<ConditionalWrites::Versioned> AzureStore::read_versioned(const std::string& key, size_t limit) {
  auto blob = client_->get_small_blob(container_, blob_name(key), limit);
  if (!blob) return std::nullopt;
  return Versioned{std::move(blob->first), std::move(blob->second)};
}

std::optional<std::string> AzureStore::write_if(const std::string& key, const std::string& contents,
                                                const std::string& expected) {
  return client_->put_blob_if(container_, blob_name(key), contents, expected);
}

std::optional<BlobInfo> AzureStore::stat(const std::string& key) {
  auto info = client_->get_properties(container_, blob_name(key));
  if (!info) return std::nullopt;
  return BlobInfo{key, info->size, info->modified_unix_micros};
}

std::vector<BlobInfo> AzureStore::list(const std::string& prefix) {
  return keys_.list(prefix, [&](const std::string& full, const std::string& marker, std::vector<BlobInfo>& out) {
    AzureListPage page = client_->list_blobs(container_, full, marker);
    for (auto& b : page.blobs) out.push_back(BlobInfo{std::move(b.name), b.size, b.modified_unix_micros});
    return page.next_marker;
  });
}

void AzureStore::remove(const std::string& key) { client_->delete_blob(container_, blob_name(key)); }

std::unique_ptr<AzureStore> open_azure_store(const std::string& container, const std::string& prefix,
                                             const AzureSettings& settings, const ObjectStoreSettings& object,
                                             const Environment& env) {
  auto client = std::make_shared<AzureClient>(resolve_azure_config(settings, env, object));
  return std::make_unique<AzureStore>(client, container, prefix, object.part_size, object.concurrency);
}

}  // namespace etcdadm

#include "store/backend/azure/azure_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"
#include "common/failpoint.h"
#include "store/backend/object/part_uploader.h"
#include "store/backend/object/streaming_reader.h"

namespace etcdadm {

namespace {

class AzureWriter : public BlobWriter {
 public:
  AzureWriter(std::shared_ptr<AzureClient> client, std::string container, std::string blob, bool overwrite,
              size_t block_size, int concurrency)
      : client_(std::move(client)),
        container_(std::move(container)),
        blob_(std::move(blob)),
        overwrite_(overwrite),
        block_size_(block_size),
        concurrency_(concurrency) {
    buffer_.reserve(block_size_);
  }
  ~AzureWriter() override { abort(); }

  void write(const uint8_t* data, size_t size) override {
    if (done_) throw Error(ErrorKind::kInternal, "write after commit/abort of " + where());
    while (size > 0) {
      size_t n = std::min(size, block_size_ - buffer_.size());
      buffer_.append(reinterpret_cast<const char*>(data), n);
      data += n;
      size -= n;
      written_ += n;
      if (buffer_.size() == block_size_) submit_block();
    }
  }

  void commit() override {
    if (done_) throw Error(ErrorKind::kInternal, "commit after commit/abort of " + where());
    if (!blocks_) {
      client_->put_blob(container_, blob_, buffer_, !overwrite_);
    } else {
      if (!buffer_.empty()) submit_block();
      std::vector<std::string> ids = blocks_->finish();
      client_->put_block_list(container_, blob_, ids, !overwrite_);
    }
    done_ = true;
    buffer_.clear();
  }

  // Staged blocks need no cleanup: uncommitted, they are invisible and expire.
  void abort() override {
    if (done_) return;
    done_ = true;
    if (blocks_) blocks_->cancel();
  }

  uint64_t bytes_written() const override { return written_; }

 private:
  std::string where() const { return "azureblob://" + container_ + "/" + blob_; }

  void submit_block() {
    if (next_block_ > kAzureMaxBlocks) {
      throw Error(ErrorKind::kInvalidArgument, where() + " would need more than 50000 blocks", "raise --upload-part-size");
    }
    if (!blocks_) {
      blocks_ = std::make_unique<ParallelPartUploader>(concurrency_, [this](int number, const std::string& data) {
        std::string id = azure_block_id(number);
        client_->put_block(container_, blob_, id, data);
        failpoint("azure/block/staged");
        return id;
      });
    }
    int number = next_block_++;
    std::string data = std::move(buffer_);
    buffer_ = std::string();
    buffer_.reserve(block_size_);
    blocks_->submit(number, std::move(data));
  }

  std::shared_ptr<AzureClient> client_;  // shared: a writer may outlive its store object
  std::string container_, blob_;
  bool overwrite_;
  size_t block_size_;
  int concurrency_;
  std::string buffer_;
  int next_block_ = 1;
  uint64_t written_ = 0;
  bool done_ = false;
  std::unique_ptr<ParallelPartUploader> blocks_;  // from the first full block on
};

}  // namespace

AzureStore::AzureStore(std::shared_ptr<AzureClient> client, std::string container, std::string prefix, size_t block_size,
                       int concurrency)
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
  return std::make_unique<AzureWriter>(client_, container_, blob_name(key), overwrite, block_size_, concurrency_);
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
                                             const AzureSettings& settings, const Environment& env) {
  auto client = std::make_shared<AzureClient>(resolve_azure_config(settings, env));
  return std::make_unique<AzureStore>(client, container, prefix, settings.block_size, settings.concurrency);
}

}  // namespace etcdadm

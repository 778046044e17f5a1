#include "store/backend/gcs/gcs_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"
#include "common/timefmt.h"
#include "store/backend/object/streaming_reader.h"

namespace etcdadm {

namespace {

class GcsWriter : public BlobWriter {
 public:
  GcsWriter(std::shared_ptr<GcsClient> client, std::string bucket, std::string name, bool overwrite, size_t chunk_size)
      : client_(std::move(client)),
        bucket_(std::move(bucket)),
        name_(std::move(name)),
        overwrite_(overwrite),
        chunk_size_(chunk_size) {
    buffer_.reserve(chunk_size_);
  }
  ~GcsWriter() override { abort(); }

  void write(const uint8_t* data, size_t size) override {
    if (done_) throw Error(ErrorKind::kInternal, "write after commit/abort of gs://" + bucket_ + "/" + name_);
    while (size > 0) {
      // A full chunk is sent only when more bytes follow, so the last chunk always carries the total.
      if (buffer_.size() == chunk_size_) send_chunk();
      size_t n = std::min(size, chunk_size_ - buffer_.size());
      buffer_.append(reinterpret_cast<const char*>(data), n);
      data += n;
      size -= n;
      written_ += n;
    }
  }

  void commit() override {
    if (done_) throw Error(ErrorKind::kInternal, "commit after commit/abort of gs://" + bucket_ + "/" + name_);
    if (session_.empty()) {
      client_->upload_media(bucket_, name_, buffer_, !overwrite_);
    } else {
      client_->upload_chunk(session_, sent_, buffer_, written_);
    }
    done_ = true;
    session_.clear();
    buffer_.clear();
  }

  void abort() override {
    if (done_) return;
    done_ = true;
    if (!session_.empty()) client_->cancel_resumable(session_);
    session_.clear();
  }

  uint64_t bytes_written() const override { return written_; }

 private:
  void send_chunk() {
    if (session_.empty()) session_ = client_->start_resumable(bucket_, name_, !overwrite_);
    client_->upload_chunk(session_, sent_, buffer_, std::nullopt);
    sent_ += buffer_.size();
    buffer_.clear();
  }

  std::shared_ptr<GcsClient> client_;  // shared: a writer may outlive its store object
  std::string bucket_, name_;
  bool overwrite_;
  size_t chunk_size_;
  std::string buffer_;
  std::string session_;
  uint64_t sent_ = 0;
  uint64_t written_ = 0;
  bool done_ = false;
};

}  // namespace

GcsStore::GcsStore(std::shared_ptr<GcsClient> client, std::string bucket, std::string prefix, size_t chunk_size)
    : client_(std::move(client)), bucket_(std::move(bucket)), keys_{std::move(prefix)} {
  chunk_size_ = std::max(kGcsChunkQuantum, chunk_size / kGcsChunkQuantum * kGcsChunkQuantum);
}

std::string GcsStore::url() const {
  std::string u = "gs://" + bucket_ + (keys_.root.empty() ? "" : "/" + keys_.root);
  if (client_->config().endpoint != "https://storage.googleapis.com") u += "?endpoint=" + client_->config().endpoint;
  return u;
}

std::string GcsStore::object_name(const std::string& key) const { return keys_.object(key); }

std::unique_ptr<BlobWriter> GcsStore::create(const std::string& key, bool overwrite) {
  // The server enforces "no overwrite" at commit (ifGenerationMatch=0); checking here as well
  // fails fast, before a large upload, on servers that ignore the precondition (emulators).
  if (!overwrite && client_->get_metadata(bucket_, object_name(key))) {
    throw Error(ErrorKind::kAlreadyExists, url() + ": " + key + " already exists");
  }
  return std::make_unique<GcsWriter>(client_, bucket_, object_name(key), overwrite, chunk_size_);
}

std::unique_ptr<BlobReader> GcsStore::open(const std::string& key) {
  std::string name = object_name(key);
  auto info = client_->get_metadata(bucket_, name);
  if (!info) throw Error(ErrorKind::kNotFound, url() + ": " + key + " does not exist");
  // The reader may outlive this store object: it shares ownership of the client.
  std::shared_ptr<GcsClient> client = client_;
  return std::make_unique<StreamingReader>(
      "gs://" + bucket_ + "/" + name, info->size, client_->config().retry,
      [client, bucket = bucket_, name, generation = info->generation](uint64_t offset, const HttpBodySink& sink) {
        client->download(bucket, name, generation, offset, sink);
      });
}

// One GET, where open() needs two (the generation, then the bytes pinned to it): a cold listing
// reads every backup's metadata this way.
std::string GcsStore::read_small(const std::string& key, size_t limit) {
  auto body = client_->get_small_object(bucket_, object_name(key), limit);
  if (!body) throw Error(ErrorKind::kNotFound, url() + ": " + key + " does not exist");
  return std::move(*body);
}

std::optional<ConditionalWrites::Versioned> GcsStore::read_versioned(const std::string& key, size_t limit) {
  std::string generation;
  auto body = client_->get_small_object(bucket_, object_name(key), limit, &generation);
  if (!body) return std::nullopt;
  return Versioned{std::move(*body), std::move(generation)};
}

std::optional<std::string> GcsStore::write_if(const std::string& key, const std::string& contents,
                                              const std::string& expected) {
  return client_->upload_media_if(bucket_, object_name(key), contents, expected);
}

std::optional<BlobInfo> GcsStore::stat(const std::string& key) {
  auto info = client_->get_metadata(bucket_, object_name(key));
  if (!info) return std::nullopt;
  return BlobInfo{key, info->size, info->modified_unix_micros};
}

std::optional<BlobLocks::Lock> GcsStore::lock_of(const std::string& key) {
  auto info = client_->get_metadata(bucket_, object_name(key));
  if (!info) return std::nullopt;
  if (info->temporary_hold) return Lock{0, "a GCS temporary hold"};
  if (info->event_based_hold) return Lock{0, "a GCS event-based hold"};
  if (info->retention_expires_micros > to_unix_micros(std::chrono::system_clock::now())) {
    return Lock{info->retention_expires_micros, "the GCS bucket's retention policy"};
  }
  return std::nullopt;
}

std::vector<BlobInfo> GcsStore::list(const std::string& prefix) {
  return keys_.list(prefix, [&](const std::string& full, const std::string& token, std::vector<BlobInfo>& out) {
    GcsListPage page = client_->list(bucket_, full, token);
    for (auto& o : page.objects) out.push_back(BlobInfo{o.name, o.size, o.modified_unix_micros});
    return page.next_page_token;
  });
}

std::vector<BlobInfo> GcsStore::list_range(const std::string& start_after, const std::string& end_before) {
  return keys_.list_range(start_after, end_before,
                          [&](const std::string& full, const std::string& first, const std::string& last,
                              const std::string& token, std::vector<BlobInfo>& out) {
                            GcsListPage page = client_->list(bucket_, full, token, 1000, false, first, last);
                            for (auto& o : page.objects)
                              out.push_back(BlobInfo{o.name, o.size, o.modified_unix_micros});
                            return page.next_page_token;
                          });
}

void GcsStore::remove(const std::string& key) { client_->remove(bucket_, object_name(key)); }

VersionedBlobs::Purge GcsStore::purge_noncurrent_versions(const std::string& prefix) {
  // GCS has no delete markers: a deleted or replaced object of a versioned bucket lives on as a
  // noncurrent generation, which only a listing with versions=true shows. A bucket without
  // versioning lists none, so there is nothing to ask first.
  Purge out;
  std::string full = object_name(prefix);
  std::string token;
  do {
    GcsListPage page = client_->list(bucket_, full, token, 1000, /*versions=*/true);
    for (const auto& o : page.objects) {
      if (!o.noncurrent) continue;
      out.versioned = true;
      try {
        client_->remove_generation(bucket_, o.name, o.generation);
        ++out.removed;
      } catch (const Error& e) {
        out.refused.push_back("gs://" + bucket_ + "/" + o.name + " (generation " + o.generation + "): " + e.what());
      }
    }
    token = page.next_page_token;
  } while (!token.empty());
  return out;
}

void GcsStore::reload_credentials() {
  // The key file is read again (a rotated service-account key); a broken one keeps the old auth.
  if (!auth_factory_) return;
  try {
    client_->set_auth(auth_factory_());
  } catch (const Error& e) {
    spdlog::error("reloading GCS credentials failed, keeping the current ones: {}", e.what());
  }
}

GcsConfig resolve_gcs_config(const GcsSettings& settings, const Environment& env, const ObjectStoreSettings& object) {
  GcsConfig c;
  std::string endpoint = settings.endpoint;
  if (endpoint.empty()) endpoint = env.value("STORAGE_EMULATOR_HOST");
  if (!endpoint.empty()) {
    c.endpoint = endpoint.find("://") == std::string::npos ? "http://" + endpoint : endpoint;
  }
  c.http.ca_file = object.ca_bundle;
  c.http.verify_tls = !object.insecure_skip_verify;
  c.http.idle_timeout = object.idle_timeout;
  return c;
}

std::unique_ptr<GcsStore> open_gcs_store(const std::string& bucket, const std::string& prefix,
                                         const GcsSettings& settings, const ObjectStoreSettings& object,
                                         const Environment& env) {
  GcsConfig config = resolve_gcs_config(settings, env, object);
  auto client = std::make_shared<GcsClient>(config, make_gcs_auth(env, credentials_http_options(config.http)));
  auto store = std::make_unique<GcsStore>(client, bucket, prefix, object.part_size);
  store->set_auth_factory([env, http = credentials_http_options(config.http)] { return make_gcs_auth(env, http); });
  return store;
}

}  // namespace etcdadm

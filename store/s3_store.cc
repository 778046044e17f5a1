#include "store/s3_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "common/timefmt.h"
#include "store/streaming_reader.h"

namespace etcdadm {

size_t s3_part_size(size_t first_part_size, int n) {
  size_t size = first_part_size;
  for (int step = 1000; n > step && size < (size_t{5} << 30); step += 1000) size *= 2;
  return size;
}

namespace {

constexpr int kMaxParts = 10000;

class S3Writer : public BlobWriter {
 public:
  S3Writer(std::shared_ptr<S3Client> client, std::string bucket, std::string key, S3StoreOptions options,
           bool create_only)
      : client_(std::move(client)),
        bucket_(std::move(bucket)),
        key_(std::move(key)),
        options_(options),
        create_only_(create_only) {
    buffer_.reserve(s3_part_size(options_.part_size, 1));
  }

  ~S3Writer() override {
    try {
      abort();
    } catch (const std::exception& e) {
      spdlog::warn("aborting upload of s3://{}/{} failed: {}", bucket_, key_, e.what());
    }
  }

  void write(const uint8_t* data, size_t size) override {
    if (done_) throw Error(ErrorKind::kInternal, "write after commit/abort of s3://" + bucket_ + "/" + key_);
    while (size > 0) {
      size_t part = s3_part_size(options_.part_size, next_part_);
      size_t n = std::min(size, part - buffer_.size());
      buffer_.append(reinterpret_cast<const char*>(data), n);
      data += n;
      size -= n;
      written_ += n;
      if (buffer_.size() == part) submit_part();
    }
  }

  void commit() override {
    if (done_) throw Error(ErrorKind::kInternal, "commit after commit/abort of s3://" + bucket_ + "/" + key_);
    if (upload_id_.empty()) {
      client_->put_object(bucket_, key_, buffer_, create_only_);
      done_ = true;
      buffer_.clear();
      return;
    }
    if (!buffer_.empty()) submit_part();
    wait_for_parts();
    std::vector<std::string> etags;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 1; i < next_part_; ++i) etags.push_back(etags_.at(i));
    }
    client_->complete_multipart_upload(bucket_, key_, upload_id_, etags, create_only_);
    done_ = true;
    upload_id_.clear();
  }

  void abort() override {
    if (done_) return;
    done_ = true;
    stop_workers(/*drop_queued=*/true);
    if (!upload_id_.empty()) {
      std::string id = upload_id_;
      upload_id_.clear();
      client_->abort_multipart_upload(bucket_, key_, id);
      spdlog::debug("aborted multipart upload of s3://{}/{}", bucket_, key_);
    }
  }

  uint64_t bytes_written() const override { return written_; }

 private:
  struct Part {
    int number;
    std::string data;
  };

  void submit_part() {
    if (next_part_ > kMaxParts) {
      throw Error(ErrorKind::kInvalidArgument, "s3://" + bucket_ + "/" + key_ + " would need more than 10000 parts",
                  "raise the part size");
    }
    if (upload_id_.empty()) {
      upload_id_ = client_->create_multipart_upload(bucket_, key_);
      for (int i = 0; i < std::max(1, options_.concurrency); ++i) workers_.emplace_back([this] { work(); });
    }
    Part p{next_part_++, std::move(buffer_)};
    buffer_ = std::string();
    buffer_.reserve(s3_part_size(options_.part_size, next_part_));
    std::unique_lock<std::mutex> lock(mu_);
    // Bounded memory: at most `concurrency` parts queued or uploading, plus the one being filled.
    cv_.wait(lock, [&] { return in_flight_ < std::max(1, options_.concurrency) || error_; });
    if (error_) std::rethrow_exception(error_);
    queue_.push_back(std::move(p));
    ++in_flight_;
    lock.unlock();
    cv_.notify_all();
  }

  void work() {
    for (;;) {
      Part p;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
        if (stopping_ && (queue_.empty() || error_)) return;
        p = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        std::string etag = client_->upload_part(bucket_, key_, upload_id_, p.number, p.data);
        std::lock_guard<std::mutex> lock(mu_);
        etags_[p.number] = etag;
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        --in_flight_;
      }
      cv_.notify_all();
    }
  }

  void wait_for_parts() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return in_flight_ == 0 || error_; });
    std::exception_ptr err = error_;
    lock.unlock();
    if (err) std::rethrow_exception(err);
    stop_workers(/*drop_queued=*/false);
  }

  void stop_workers(bool drop_queued) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      if (drop_queued || error_) queue_.clear();
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::shared_ptr<S3Client> client_;  // shared: a writer may outlive its store object
  std::string bucket_, key_;
  S3StoreOptions options_;
  bool create_only_;  // If-None-Match: * on the write that makes the object visible
  std::string buffer_;
  std::string upload_id_;
  int next_part_ = 1;
  uint64_t written_ = 0;
  bool done_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Part> queue_;
  int in_flight_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::map<int, std::string> etags_;
  std::vector<std::thread> workers_;
};

std::string first_non_empty(std::initializer_list<std::string> values) {
  for (const auto& v : values) {
    if (!v.empty()) return v;
  }
  return "";
}

}  // namespace

S3Store::S3Store(std::shared_ptr<S3Client> client, std::string bucket, std::string prefix, S3StoreOptions options)
    : client_(std::move(client)), bucket_(std::move(bucket)), keys_{std::move(prefix)}, options_(options) {
  if (options_.part_size < (5u << 20)) options_.part_size = 5u << 20;
  if (options_.concurrency < 1) options_.concurrency = 1;
}

std::string S3Store::url() const {
  std::string u = "s3://" + bucket_ + (keys_.root.empty() ? "" : "/" + keys_.root);
  // Two servers can have buckets of the same name: the endpoint is part of the store's identity.
  if (!client_->config().endpoint.empty()) u += "?endpoint=" + client_->config().endpoint;
  return u;
}

std::string S3Store::object_key(const std::string& key) const { return keys_.object(key); }

std::unique_ptr<BlobWriter> S3Store::create(const std::string& key, bool overwrite) {
  // "No overwrite" twice: a check now, so that a clash fails before gigabytes go up, and
  // If-None-Match: * on the write that makes the object visible, which closes the race between two
  // writers where the server supports conditional writes (AWS, MinIO). Swift's s3api answers that
  // header with 501 and then only the check holds; backup names carry microseconds, so a race
  // would need two writers of the same backup in the same microsecond.
  if (!overwrite && client_->head_object(bucket_, object_key(key))) {
    throw Error(ErrorKind::kAlreadyExists, url() + ": " + key + " already exists");
  }
  return std::make_unique<S3Writer>(client_, bucket_, object_key(key), options_, /*create_only=*/!overwrite);
}

std::unique_ptr<BlobReader> S3Store::open(const std::string& key) {
  auto info = client_->head_object(bucket_, object_key(key));
  if (!info) throw Error(ErrorKind::kNotFound, url() + ": " + key + " does not exist");
  std::string object = object_key(key);
  std::string etag = info->etag;
  // The reader may outlive this store object: it shares ownership of the client.
  std::shared_ptr<S3Client> client = client_;
  return std::make_unique<StreamingReader>(
      "s3://" + bucket_ + "/" + object, info->size, client_->config().retry,
      [client, bucket = bucket_, object, etag](uint64_t offset, const HttpBodySink& sink) {
        client->get_object(bucket, object, offset, etag, sink);
      });
}

std::optional<BlobInfo> S3Store::stat(const std::string& key) {
  auto info = client_->head_object(bucket_, object_key(key));
  if (!info) return std::nullopt;
  return BlobInfo{key, info->size, info->modified_unix_micros};
}

std::vector<BlobInfo> S3Store::list(const std::string& prefix) {
  return keys_.list(prefix, [&](const std::string& full, const std::string& token, std::vector<BlobInfo>& out) {
    S3ListPage page = client_->list_objects(bucket_, full, token);
    for (auto& o : page.objects) out.push_back(BlobInfo{o.key, o.size, o.modified_unix_micros});
    return page.next_continuation_token;
  });
}

void S3Store::remove(const std::string& key) { client_->delete_object(bucket_, object_key(key)); }

void S3Store::remove_many(const std::vector<std::string>& keys) {
  for (size_t i = 0; i < keys.size(); i += 1000) {
    std::vector<std::string> batch;
    for (size_t j = i; j < keys.size() && j < i + 1000; ++j) batch.push_back(object_key(keys[j]));
    client_->delete_objects(bucket_, batch);
  }
}

std::vector<std::string> S3Store::remove_abandoned(std::chrono::seconds older_than) {
  std::vector<std::string> removed;
  int64_t cutoff = to_unix_micros(std::chrono::system_clock::now() - older_than);
  std::string prefix = keys_.root.empty() ? "" : keys_.root + "/";
  for (const S3Upload& u : client_->list_multipart_uploads(bucket_, prefix)) {
    if (u.initiated_unix_micros == 0 || u.initiated_unix_micros > cutoff) continue;  // maybe still running
    client_->abort_multipart_upload(bucket_, u.key, u.upload_id);
    removed.push_back("unfinished multipart upload of s3://" + bucket_ + "/" + u.key + " started " +
                      format_rfc3339_seconds(from_unix_micros(u.initiated_unix_micros)));
  }
  return removed;
}

S3Config resolve_s3_config(const S3Settings& s, const Environment& env) {
  S3Config c;
  c.endpoint = first_non_empty(
      {s.endpoint, env.value("S3_ENDPOINT"), env.value("AWS_ENDPOINT_URL_S3"), env.value("AWS_ENDPOINT_URL")});
  if (!c.endpoint.empty() && c.endpoint.find("://") == std::string::npos) c.endpoint = "https://" + c.endpoint;
  c.region = first_non_empty({s.region, env.value("S3_REGION"), env.value("AWS_REGION"),
                              env.value("AWS_DEFAULT_REGION"), aws_profile_region(env), "us-east-1"});
  if (s.addressing == "path") {
    c.path_style = true;
  } else if (s.addressing == "virtual") {
    c.path_style = false;
  } else if (s.addressing.empty()) {
    c.path_style = !c.endpoint.empty();
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown S3 addressing style " + s.addressing, "use path or virtual");
  }
  c.http.ca_file = first_non_empty({s.ca_bundle, env.value("AWS_CA_BUNDLE")});
  c.http.verify_tls = !s.insecure_skip_verify;
  c.unsigned_payload = s.unsigned_payload;
  if (!s.sse.empty() && s.sse != "AES256" && s.sse != "aws:kms") {
    throw Error(ErrorKind::kInvalidArgument, "unknown S3 server-side encryption " + s.sse, "use AES256 or aws:kms");
  }
  if (!s.sse_kms_key_id.empty() && s.sse != "aws:kms") {
    throw Error(ErrorKind::kInvalidArgument, "a KMS key id needs --s3-sse aws:kms");
  }
  c.sse = s.sse;
  c.sse_kms_key_id = s.sse_kms_key_id;
  return c;
}

std::unique_ptr<S3Store> open_s3_store(const std::string& bucket, const std::string& prefix, const S3Settings& settings,
                                       const Environment& env) {
  S3Config config = resolve_s3_config(settings, env);
  auto creds = make_default_credential_chain(env, config.region, config.http);
  auto client = std::make_shared<S3Client>(config, creds);
  return std::make_unique<S3Store>(client, bucket, prefix, settings.store);
}

}  // namespace etcdadm

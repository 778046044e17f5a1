#include "store/backend/s3/s3_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/error.h"
#include "common/parallel.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "store/backend/object/parted_writer.h"
#include "store/backend/object/streaming_reader.h"

namespace etcdadm {

size_t s3_part_size(size_t first_part_size, int n) {
  size_t size = first_part_size;
  for (int step = 1000; n > step && size < (size_t{5} << 30); step += 1000) size *= 2;
  return size;
}

namespace {

constexpr int kMaxParts = 10000;
constexpr size_t kDeleteBatchKeys = 1000;  // DeleteObjects' limit
constexpr size_t kConcurrentDeleteBatches = 4;

// A multipart upload; parts grow past every 1000th so that 10,000 of them hold up to S3's 5 TiB.
class S3MultipartUpload : public PartedUpload {
 public:
  S3MultipartUpload(std::shared_ptr<S3Client> client, std::string bucket, std::string key, size_t first_part_size,
                    bool create_only)
      : client_(std::move(client)),
        bucket_(std::move(bucket)),
        key_(std::move(key)),
        first_part_size_(first_part_size),
        create_only_(create_only) {}

  std::string where() const override { return "s3://" + bucket_ + "/" + key_; }
  size_t part_size(int number) const override { return s3_part_size(first_part_size_, number); }
  int max_parts() const override { return kMaxParts; }
  void put_whole(std::string_view data) override { client_->put_object(bucket_, key_, data, create_only_); }
  void begin() override { upload_id_ = client_->create_multipart_upload(bucket_, key_); }
  std::string put_part(int number, const std::string& data) override {
    return client_->upload_part(bucket_, key_, upload_id_, number, data);
  }
  void complete(const std::vector<std::string>& etags, const std::vector<uint64_t>&) override {
    client_->complete_multipart_upload(bucket_, key_, upload_id_, etags, create_only_);
  }
  void abandon(int) override {
    client_->abort_multipart_upload(bucket_, key_, upload_id_);
    spdlog::debug("aborted multipart upload of {}", where());
  }

 private:
  std::shared_ptr<S3Client> client_;  // shared: a writer may outlive its store object
  std::string bucket_, key_;
  size_t first_part_size_;
  bool create_only_;  // If-None-Match: * on the write that makes the object visible
  std::string upload_id_;
};

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
  return std::make_unique<PartedWriter>(
      std::make_unique<S3MultipartUpload>(client_, bucket_, object_key(key), options_.part_size,
                                          /*create_only=*/!overwrite),
      options_.concurrency);
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

std::optional<BlobLocks::Lock> S3Store::lock_of(const std::string& key) {
  auto info = client_->head_object(bucket_, object_key(key));
  if (!info) return std::nullopt;
  if (info->legal_hold) return Lock{0, "an Object Lock legal hold"};
  if (info->retain_until_micros > to_unix_micros(std::chrono::system_clock::now())) {
    std::string mode = info->lock_mode;
    std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return Lock{info->retain_until_micros, "Object Lock " + (mode.empty() ? std::string("retention") : mode + " mode")};
  }
  return std::nullopt;
}

std::vector<BlobInfo> S3Store::list(const std::string& prefix) {
  return keys_.list(prefix, [&](const std::string& full, const std::string& token, std::vector<BlobInfo>& out) {
    S3ListPage page = client_->list_objects(bucket_, full, token);
    for (auto& o : page.objects) out.push_back(BlobInfo{o.key, o.size, o.modified_unix_micros});
    return page.next_continuation_token;
  });
}

std::string S3Store::read_small(const std::string& key, size_t limit) {
  auto body = client_->get_small_object(bucket_, object_key(key));
  if (!body) throw Error(ErrorKind::kNotFound, url() + ": " + key + " does not exist");
  if (body->size() > limit) throw Error(ErrorKind::kCorrupt, key + " in " + url() + " is larger than expected");
  return std::move(*body);
}

std::optional<ConditionalWrites::Versioned> S3Store::read_versioned(const std::string& key, size_t limit) {
  std::string etag;
  auto body = client_->get_small_object(bucket_, object_key(key), &etag);
  if (!body) return std::nullopt;
  if (body->size() > limit) throw Error(ErrorKind::kCorrupt, key + " in " + url() + " is larger than expected");
  if (etag.empty()) throw Error(ErrorKind::kCorrupt, url() + ": the server sent " + key + " without an ETag");
  return Versioned{std::move(*body), std::move(etag)};
}

std::optional<std::string> S3Store::write_if(const std::string& key, const std::string& contents,
                                             const std::string& expected) {
  return client_->put_object_if(bucket_, object_key(key), contents, expected);
}

std::vector<BlobInfo> S3Store::list_range(const std::string& start_after, const std::string& end_before) {
  return keys_.list_range(start_after, end_before,
                          [&](const std::string& full, const std::string& first, const std::string&,
                              const std::string& token, std::vector<BlobInfo>& out) {
                            S3ListPage page = client_->list_objects(bucket_, full, token, 1000, first);
                            for (auto& o : page.objects) out.push_back(BlobInfo{o.key, o.size, o.modified_unix_micros});
                            return page.next_continuation_token;
                          });
}

void S3Store::remove(const std::string& key) { client_->delete_object(bucket_, object_key(key)); }

void S3Store::remove_many(const std::vector<std::string>& keys) {
  // DeleteObjects takes 1,000 keys; the server deletes them one by one (Swift's s3api two at a
  // time), so a batch takes seconds and several are sent at once: 9,000 backups on Swift s3api
  // took 72 s one batch after the other (bench/docs/catalog_scale_bench.md).
  const size_t batches = (keys.size() + kDeleteBatchKeys - 1) / kDeleteBatchKeys;
  for_each_index_in_parallel(batches, kConcurrentDeleteBatches, [&](size_t b) {
    std::vector<std::string> batch;
    for (size_t j = b * kDeleteBatchKeys; j < keys.size() && j < (b + 1) * kDeleteBatchKeys; ++j)
      batch.push_back(object_key(keys[j]));
    client_->delete_objects(bucket_, batch);
  });
}

VersionedBlobs::Purge S3Store::purge_noncurrent_versions(const std::string& prefix) {
  Purge out;
  // One request tells a bucket that never kept versions (no status) from one that does or did.
  if (client_->bucket_versioning(bucket_).empty()) return out;
  out.versioned = true;
  std::string full = object_key(prefix);
  std::vector<S3ObjectVersion> noncurrent, markers;
  std::string key_marker, version_marker;
  do {
    S3VersionsPage page = client_->list_object_versions(bucket_, full, key_marker, version_marker);
    for (auto& v : page.versions) {
      if (v.delete_marker)
        markers.push_back(std::move(v));
      else if (!v.latest)
        noncurrent.push_back(std::move(v));
    }
    key_marker = page.next_key_marker;
    version_marker = page.next_version_id_marker;
  } while (!key_marker.empty());
  // Versions first: a key's delete marker goes only once nothing it hides is left, so that a
  // version the bucket refuses to delete never becomes current again.
  std::set<std::string> kept_keys;
  auto remove = [&](const std::vector<S3ObjectVersion>& versions) {
    for (size_t i = 0; i < versions.size(); i += 1000) {
      std::vector<S3ObjectVersion> batch(versions.begin() + i, versions.begin() + std::min(versions.size(), i + 1000));
      auto failures = client_->delete_object_versions(bucket_, batch);
      out.removed += batch.size() - failures.size();
      for (const auto& f : failures) {
        kept_keys.insert(f.key);
        out.refused.push_back("s3://" + bucket_ + "/" + f.key + ": " + f.code + " " + f.message);
      }
    }
  };
  remove(noncurrent);
  std::vector<S3ObjectVersion> free_markers;
  for (auto& m : markers) {
    if (!kept_keys.count(m.key)) free_markers.push_back(std::move(m));
  }
  remove(free_markers);
  return out;
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

S3Config resolve_s3_config(const S3Settings& s, const Environment& env, const ObjectStoreSettings& object) {
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
  c.http.ca_file = first_non_empty({object.ca_bundle, env.value("AWS_CA_BUNDLE")});
  c.http.verify_tls = !object.insecure_skip_verify;
  c.http.idle_timeout = object.idle_timeout;
  c.unsigned_payload = s.unsigned_payload;
  if (!s.sse.empty() && s.sse != "AES256" && s.sse != "aws:kms") {
    throw Error(ErrorKind::kInvalidArgument, "unknown S3 server-side encryption " + s.sse, "use AES256 or aws:kms");
  }
  if (!s.sse_kms_key_id.empty() && s.sse != "aws:kms") {
    throw Error(ErrorKind::kInvalidArgument, "a KMS key id needs --s3-sse aws:kms");
  }
  c.sse = s.sse;
  c.sse_kms_key_id = s.sse_kms_key_id;
  if (s.object_lock_days < 0) throw Error(ErrorKind::kInvalidArgument, "--object-lock-days must not be negative");
  std::string mode = s.object_lock_mode.empty() ? "COMPLIANCE" : s.object_lock_mode;
  std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char ch) { return std::toupper(ch); });
  if (mode != "COMPLIANCE" && mode != "GOVERNANCE") {
    throw Error(ErrorKind::kInvalidArgument, "unknown Object Lock mode " + s.object_lock_mode,
                "use compliance or governance");
  }
  if (s.object_lock_days > 0) {
    c.object_lock_days = s.object_lock_days;
    c.object_lock_mode = mode;
  }
  return c;
}

std::unique_ptr<S3Store> open_s3_store(const std::string& bucket, const std::string& prefix, const S3Settings& settings,
                                       const ObjectStoreSettings& object, const Environment& env) {
  S3Config config = resolve_s3_config(settings, env, object);
  auto creds = make_default_credential_chain(env, config.region, credentials_http_options(config.http));
  auto client = std::make_shared<S3Client>(config, creds);
  return std::make_unique<S3Store>(client, bucket, prefix, S3StoreOptions{object.part_size, object.concurrency});
}

}  // namespace etcdadm

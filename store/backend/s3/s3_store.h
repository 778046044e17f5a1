// The S3 backend of the blob store: s3://bucket/prefix.
//
// Writes stream: bytes fill a part buffer; the first full part starts a multipart upload and
// parts upload in parallel (`concurrency` at a time, each retried), so memory stays at
// (concurrency + 1) part buffers whatever the object size. Part size starts at `part_size` and
// doubles every 1000 parts, so a 100 GiB object needs ~4000 parts (S3 allows 10,000). An object
// smaller than one part goes up in a single PUT. Nothing is visible under the key until commit()
// completes the upload; a failed or aborted writer aborts its multipart upload, so no parts are
// left behind to be billed.
//
// Reads stream one GET from a background thread into a small queue; a dropped connection resumes
// with a Range request from the byte reached, pinned to the object's ETag.
#pragma once

#include <memory>
#include <string>

#include "common/http_client.h"
#include "store/backend/s3/aws_credentials.h"
#include "store/backend/s3/s3_client.h"
#include "store/blob_capabilities.h"
#include "store/store_options.h"

namespace etcdadm {

struct S3StoreOptions {
  size_t part_size = 8u << 20;  // first part size; S3's minimum is 5 MiB
  int concurrency = 4;          // parts uploading at once
};

class S3Store : public BlobStore,
                public LeftoverUploads,
                public VersionedBlobs,
                public BlobLocks,
                public ReloadableCredentials,
                public ConditionalWrites {
 public:
  S3Store(std::shared_ptr<S3Client> client, std::string bucket, std::string prefix, S3StoreOptions options = {});

  std::string url() const override;
  std::unique_ptr<BlobWriter> create(const std::string& key, bool overwrite) override;
  std::unique_ptr<BlobReader> open(const std::string& key) override;
  std::optional<BlobInfo> stat(const std::string& key) override;
  std::vector<BlobInfo> list(const std::string& prefix) override;
  std::vector<BlobInfo> list_range(const std::string& start_after, const std::string& end_before) override;
  // One GET, without open()'s HEAD: a cold `backup list` reads every backup's metadata this way.
  std::string read_small(const std::string& key, size_t limit = 16 * 1024 * 1024) override;
  void remove(const std::string& key) override;
  void remove_many(const std::vector<std::string>& keys) override;
  std::optional<Lock> lock_of(const std::string& key) override;
  std::vector<std::string> remove_abandoned(std::chrono::seconds older_than) override;
  Purge purge_noncurrent_versions(const std::string& prefix) override;
  void reload_credentials() override { client_->reload_credentials(); }
  std::optional<Versioned> read_versioned(const std::string& key, size_t limit) override;
  std::optional<std::string> write_if(const std::string& key, const std::string& contents,
                                      const std::string& expected) override;

  S3Client& client() { return *client_; }
  const std::string& bucket() const { return bucket_; }
  // The object key of a store key (prefix + "/" + key).
  std::string object_key(const std::string& key) const;

 private:
  std::shared_ptr<S3Client> client_;
  std::string bucket_;
  ObjectKeys keys_;
  S3StoreOptions options_;
};

// Part size for 1-based part `n` given the first part's size: doubles every 1000 parts.
size_t s3_part_size(size_t first_part_size, int n);

// Fills in what the flags left empty, in this order: flag, etcd-manager's S3_ENDPOINT/S3_REGION,
// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_REGION / AWS_DEFAULT_REGION, the profile's region,
// "us-east-1"; AWS_CA_BUNDLE for the CA. A custom endpoint defaults to path-style addressing
// (what S3-compatible servers expect and what etcd-manager does), AWS to virtual-hosted.
S3Config resolve_s3_config(const S3Settings& settings, const Environment& env, const ObjectStoreSettings& object = {});

std::unique_ptr<S3Store> open_s3_store(const std::string& bucket, const std::string& prefix, const S3Settings& settings,
                                       const ObjectStoreSettings& object, const Environment& env);

}  // namespace etcdadm

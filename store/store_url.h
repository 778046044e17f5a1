// Backup store URLs: a path, file:///path, s3://bucket/prefix, gs://bucket/prefix,
// azureblob://container/prefix, swift://container/prefix.
#pragma once

#include <memory>
#include <string>

#include "store/backend/azure/azure_store.h"
#include "store/backend/gcs/gcs_store.h"
#include "store/backend/s3/s3_store.h"
#include "store/backend/swift/swift_store.h"

namespace etcdadm {

class BlobStore;

struct StoreUrl {
  enum class Scheme { kFile, kS3, kGcs, kAzure, kSwift };
  Scheme scheme = Scheme::kFile;
  std::string path;    // kFile: absolute directory
  std::string bucket;  // kS3/kGcs: the bucket; kAzure/kSwift: the container
  std::string prefix;  // object stores: no leading or trailing '/'
  std::string canonical() const;
};

// Throws kInvalidArgument with an example of the accepted forms.
StoreUrl parse_store_url(const std::string& url);

// Backend settings from the command line; whatever is left empty comes from the environment
// (see resolve_s3_config).
struct StoreOptions {
  S3Settings s3;
  GcsSettings gcs;
  AzureSettings azure;
  SwiftSettings swift;
};

// Opens the backend for a URL. Backends not built into this version fail with a clear message.
std::unique_ptr<BlobStore> open_store(const std::string& url, const StoreOptions& options = {});

}  // namespace etcdadm

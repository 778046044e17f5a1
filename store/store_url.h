// Backup store URLs: a path, file:///path, s3://bucket/prefix, gs://bucket/prefix,
// azureblob://container/prefix, swift://container/prefix.
#pragma once

#include <memory>
#include <string>

#include "store/store_options.h"

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

// Opens the backend for a URL. Backends not built into this version fail with a clear message.
std::unique_ptr<BlobStore> open_store(const std::string& url, const StoreOptions& options = {});

}  // namespace etcdadm

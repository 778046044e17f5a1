// The one small storage interface every backup store backend implements (a local directory, S3,
// GCS, Azure Blob, Swift): the verbs every backend has. What only some backends can do (versions,
// locks, file modes, leftover uploads, reloadable credentials) is a capability of its own, in
// store/blob_capabilities.h. Keys are '/'-separated paths relative to the store root. The keys
// that open encrypted backups are not the storage's business: they travel on the handle above it
// (store/backup_store.h).
//
// Contract:
//  - A blob written through create() is invisible under its key until commit() returns; an
//    aborted or destroyed-uncommitted writer leaves nothing visible under the key.
//  - create() never replaces an existing blob unless `overwrite` is true.
//  - list() returns every committed blob whose key starts with `prefix`, in key order.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/byte_sink.h"

namespace etcdadm {

struct BlobInfo {
  std::string key;
  uint64_t size = 0;
  int64_t modified_unix_micros = 0;
};

class BlobWriter : public ByteSink {
 public:
  virtual void commit() = 0;
  virtual void abort() = 0;  // idempotent
  virtual uint64_t bytes_written() const = 0;
};

class BlobReader {
 public:
  virtual ~BlobReader() = default;
  // Reads up to `size` bytes; returns 0 at the end.
  virtual size_t read(uint8_t* buffer, size_t size) = 0;
  virtual uint64_t size() const = 0;
};

class BlobStore {
 public:
  virtual ~BlobStore() = default;
  // Canonical URL of the store (used as the catalog key and in messages).
  virtual std::string url() const = 0;
  virtual std::unique_ptr<BlobWriter> create(const std::string& key, bool overwrite = false) = 0;
  // Throws kNotFound when the blob does not exist.
  virtual std::unique_ptr<BlobReader> open(const std::string& key) = 0;
  virtual std::optional<BlobInfo> stat(const std::string& key) = 0;
  virtual std::vector<BlobInfo> list(const std::string& prefix) = 0;
  // The blobs whose keys lie strictly between `start_after` and `end_before` (both non-empty), in
  // key order: the catalog's incremental sync lists only the backups named after those it knows.
  // Backends whose listing takes a range (S3 start-after, GCS startOffset/endOffset, Swift
  // marker/end_marker) ask for just that and stop paging past `end_before`; the others (local
  // directories, Azure Blob) filter a full listing.
  virtual std::vector<BlobInfo> list_range(const std::string& start_after, const std::string& end_before);
  // Removing a missing blob is not an error.
  virtual void remove(const std::string& key) = 0;
  // Removes several blobs; backends with a batch call (S3 DeleteObjects) override it.
  virtual void remove_many(const std::vector<std::string>& keys) {
    for (const auto& k : keys) remove(k);
  }

  // Convenience for small files (metadata, markers).
  // Backends that can read a whole object in one request (no stat first) override it.
  virtual std::string read_small(const std::string& key, size_t limit = 16 * 1024 * 1024);
  void write_small(const std::string& key, const std::string& contents, bool overwrite = false);
};

// Refuses (kCorrupt) a key or prefix with a leading '/', an empty, "." or ".." segment (a prefix's
// trailing '/' aside) or a control character. Keys are built from names that a store's listing and
// metadata supply, so they are hostile input: such a segment resolves outside the store once it
// becomes a path or a URL (libcurl and servers collapse "/../").
void check_store_key(const std::string& key);

// Key mapping shared by the object-store backends: a store rooted at `root` ("" or "a/b", no
// slashes at the ends) inside a bucket. Every key is checked (check_store_key) on its way to a URL.
struct ObjectKeys {
  std::string root;
  std::string object(const std::string& key) const {
    check_store_key(key);
    return root.empty() ? key : root + "/" + key;
  }
  // Pages through a bucket listing. `page(object_prefix, token, out)` appends the objects of one
  // page (full object names) and returns the next page's token ("" after the last). Returns the
  // store keys under `prefix`, sorted.
  using PageFn = std::function<std::string(const std::string&, const std::string&, std::vector<BlobInfo>&)>;
  std::vector<BlobInfo> list(const std::string& prefix, const PageFn& page) const;
  // BlobStore::list_range over a bucket. `page(object_prefix, object_start_after, object_end_before,
  // token, out)` asks for one page of the objects in that range (as far as the API can say so);
  // paging stops at the first object at or past `end_before`.
  using RangePageFn = std::function<std::string(const std::string&, const std::string&, const std::string&,
                                                const std::string&, std::vector<BlobInfo>&)>;
  std::vector<BlobInfo> list_range(const std::string& start_after, const std::string& end_before,
                                   const RangePageFn& page) const;
};

}  // namespace etcdadm

// The one small storage interface every backup store backend implements (local directory today;
// S3 and GCS behind the same interface). Keys are '/'-separated paths relative to the store root.
//
// Contract:
//  - A blob written through create() is invisible under its key until commit() returns; an
//    aborted or destroyed-uncommitted writer leaves nothing visible under the key.
//  - create() never replaces an existing blob unless `overwrite` is true.
//  - list() returns every committed blob whose key starts with `prefix`, in key order.
#pragma once

#include <cstddef>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/age.h"
#include "store/codec.h"

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

  // Removes what writers that died before commit() left behind (S3 multipart uploads that were
  // never completed or aborted, local temp files) once it is older than `older_than`: a process
  // killed mid-upload cannot clean up after itself, so the next save does. Returns one line per
  // item removed. Backends with nothing to clean (GCS sessions expire by themselves) return none.
  virtual std::vector<std::string> remove_abandoned(std::chrono::seconds older_than) {
    (void)older_than;
    return {};
  }

  // Versioned buckets (S3 versioning, GCS object versioning) keep whatever is deleted or
  // overwritten as noncurrent versions: billed forever and, after a rekey, still readable with the
  // retired key. Removes under `prefix` every noncurrent version and every delete marker, so that
  // deleted keys are gone for good and overwritten ones keep only their current bytes. A version
  // the store refuses to delete (Object Lock, a retention policy, a hold) is left, and so is its
  // key's delete marker, so nothing deleted reappears. Unversioned stores: nothing to do.
  struct VersionPurge {
    bool versioned = false;  // S3: the bucket has (or had) versioning on; GCS: noncurrent generations were found
    size_t removed = 0;      // versions and delete markers removed
    std::vector<std::string> refused;  // "key (version): why", one per version left
  };
  virtual VersionPurge purge_noncurrent_versions(const std::string& prefix) {
    (void)prefix;
    return {};
  }

  // Who may read what this store writes, on backends with file modes (local directories): files
  // get exactly `file_mode` (umask not applied), directories the same bits plus search wherever
  // read is granted (0600 -> 0700, 0640 -> 0750). Object stores have no modes; etcdadm never sets
  // an ACL on what it uploads, so the bucket's policy decides there.
  virtual void set_file_mode(uint32_t file_mode) { (void)file_mode; }

  // What in the store allows more access than `file_mode` (and its directory mode) grants: files
  // and directories written by an older etcdadm or changed by hand, which let other users read the
  // cluster's Secrets. One line per finding kind, with an example path and the fix; empty when
  // nothing is exposed or the backend has no modes.
  virtual std::vector<std::string> access_findings(uint32_t file_mode) {
    (void)file_mode;
    return {};
  }

  // What keeps `key` from being deleted now: an S3 Object Lock retention date still ahead, or a
  // legal hold; a GCS retention period or object hold. Checked by prune before it deletes anything
  // of a backup, because on a versioned bucket a delete without a version ID "succeeds" as a
  // delete marker that only hides the locked object. nullopt: nothing (backends without locks).
  struct Lock {
    int64_t until_micros = 0;  // 0: a hold without a date (until someone releases it)
    std::string why;           // "Object Lock compliance mode", "an Object Lock legal hold"
  };
  virtual std::optional<Lock> lock_of(const std::string& key) {
    (void)key;
    return std::nullopt;
  }

  // Forgets cached credentials so the next request resolves them again from their source (files
  // rewritten by an operator or a secret rotation; the sidecar calls it on SIGHUP). Thread-safe.
  virtual void reload_credentials() {}

  // The keys this process holds to open encrypted backups (--identity, --passphrase-file and
  // their environment variables). Every read of a backup starts from the store handle a command
  // opened, so the keys travel with it, as its credentials do. nullptr: none given.
  void set_decryption_keys(std::shared_ptr<const age::Identities> keys) { decryption_keys_ = std::move(keys); }
  const age::Identities* decryption_keys() const { return decryption_keys_.get(); }

  // Convenience for small files (metadata, markers).
  // Backends that can read a whole object in one request (no stat first) override it.
  virtual std::string read_small(const std::string& key, size_t limit = 16 * 1024 * 1024);
  void write_small(const std::string& key, const std::string& contents, bool overwrite = false);

 private:
  std::shared_ptr<const age::Identities> decryption_keys_;
};

// Before a writing command (save, copy): BlobStore::remove_abandoned, each removal logged. Best
// effort: a failure to clean is only a warning, never the command's failure. Zero: nothing.
void clean_abandoned(BlobStore& store, std::chrono::seconds older_than);

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

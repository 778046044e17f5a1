// What only some storage backends can do, each a small interface a backend implements beside
// BlobStore (store/blob_store.h). Callers ask with capability<T>(store), or use the free functions
// below, which do what a backend without the capability needs: nothing.
//
//   capability              backends
//   LeftoverUploads         local (temp files), S3 (multipart uploads), Swift (SLO segments)
//   VersionedBlobs          S3 (bucket versioning), GCS (object versioning)
//   BlobLocks               S3 (Object Lock, legal holds), GCS (retention policies, holds)
//   FileModes               local
//   ReloadableCredentials   S3, GCS, Azure, Swift
//   ConditionalWrites       local (a lock file beside the blob), S3 (If-None-Match / If-Match),
//                           GCS (ifGenerationMatch), Azure (If-None-Match / If-Match); not Swift,
//                           which has no compare-and-swap
//   MadeOnFirstWrite        local (its directory); an object store's bucket is never made by a write
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/blob_store.h"

namespace etcdadm {

// Writers that died before commit() leave something behind on some backends (S3 multipart uploads
// never completed or aborted, Swift segments without a manifest, local temp files): a process
// killed mid-upload cannot clean up after itself, so the next save does.
class LeftoverUploads {
 public:
  virtual ~LeftoverUploads() = default;
  // Removes what is older than `older_than`; one line per item removed.
  virtual std::vector<std::string> remove_abandoned(std::chrono::seconds older_than) = 0;
};

// Versioned buckets (S3 versioning, GCS object versioning) keep whatever is deleted or overwritten
// as noncurrent versions: billed forever and, after a rekey, still readable with the retired key.
class VersionedBlobs {
 public:
  struct Purge {
    bool versioned = false;  // S3: the bucket has (or had) versioning on; GCS: noncurrent generations were found
    size_t removed = 0;      // versions and delete markers removed
    std::vector<std::string> refused;  // "key (version): why", one per version left
  };
  virtual ~VersionedBlobs() = default;
  // Removes under `prefix` every noncurrent version and every delete marker, so that deleted keys
  // are gone for good and overwritten ones keep only their current bytes. A version the store
  // refuses to delete (Object Lock, a retention policy, a hold) is left, and so is its key's
  // delete marker, so nothing deleted reappears.
  virtual Purge purge_noncurrent_versions(const std::string& prefix) = 0;
};

// What keeps a blob from being deleted now. Checked by prune before it deletes anything of a
// backup, because on a versioned bucket a delete without a version ID "succeeds" as a delete
// marker that only hides the locked object.
class BlobLocks {
 public:
  struct Lock {
    int64_t until_micros = 0;  // 0: a hold without a date (until someone releases it)
    std::string why;           // "Object Lock compliance mode", "an Object Lock legal hold"
  };
  virtual ~BlobLocks() = default;
  // An S3 Object Lock retention date still ahead, or a legal hold; a GCS retention period or
  // object hold. nullopt: nothing.
  virtual std::optional<Lock> lock_of(const std::string& key) = 0;
};

// Who may read what the store writes, on backends with file modes (local directories). Object
// stores have no modes; etcdadm never sets an ACL on what it uploads, so the bucket's policy
// decides there.
class FileModes {
 public:
  virtual ~FileModes() = default;
  // Files get exactly `file_mode` (umask not applied), directories the same bits plus search
  // wherever read is granted (0600 -> 0700, 0640 -> 0750).
  virtual void set_file_mode(uint32_t file_mode) = 0;
  // What in the store allows more access than `file_mode` (and its directory mode) grants: files
  // and directories written by an older etcdadm or changed by hand, which let other users read the
  // cluster's Secrets. One line per finding kind, with an example path and the fix.
  virtual std::vector<std::string> access_findings(uint32_t file_mode) = 0;
};

// Credentials cached by the backend, resolved again from their source on demand (files rewritten
// by an operator or a secret rotation; the sidecar asks on SIGHUP). Thread-safe.
class ReloadableCredentials {
 public:
  virtual ~ReloadableCredentials() = default;
  virtual void reload_credentials() = 0;
};

// Writes that take effect only when the blob is still as the writer last read it: the primitive a
// lease in the store is built on (docs/self-management.md). The server decides, in the one request
// that writes: two writers that read the same version cannot both succeed.
class ConditionalWrites {
 public:
  struct Versioned {
    std::string contents;
    // Opaque, changes with every write: the ETag (S3, Azure), the generation (GCS), "sha256:<hex>"
    // of the contents (local). Two writes of the same bytes may share a version on some backends,
    // so what is written through write_if must differ every time (a counter, a nonce).
    std::string version;
  };
  virtual ~ConditionalWrites() = default;
  // The blob and its version; nullopt when it does not exist. kCorrupt past `limit` bytes.
  virtual std::optional<Versioned> read_versioned(const std::string& key, size_t limit = 1 << 20) = 0;
  // Writes `contents` under `key` if the blob's version is `expected` ("": only if there is no blob)
  // and returns the new version; nullopt when the precondition failed (another writer came first).
  // A write whose answer was lost may report nullopt although it took effect: read again and
  // compare the contents (they are unique, above). Throws kInvalidArgument when the server does
  // not enforce the condition (an S3-compatible server without conditional writes).
  virtual std::optional<std::string> write_if(const std::string& key, const std::string& contents,
                                              const std::string& expected) = 0;
};

// A store whose root a first write makes (a local directory). A long-running writer that found
// the store existing (`etcdadm auto`) keeps it from being made again: a directory renamed away or
// removed is then an error of every write, not a new empty store in its place. (A volume unmounted
// under its mount point leaves a directory: that takes the store's own marker to tell.)
class MadeOnFirstWrite {
 public:
  virtual ~MadeOnFirstWrite() = default;
  // From now on a write into a store whose root is gone fails (kNotFound) instead of making it.
  virtual void never_make_again() = 0;
};

// The capability `C` of `store`, or nullptr when its backend has none.
template <class C>
C* capability(BlobStore& store) {
  return dynamic_cast<C*>(&store);
}

// Before a writing command (save, copy): LeftoverUploads::remove_abandoned, each removal logged.
// Best effort: a failure to clean is only a warning, never the command's failure. Zero: nothing.
void clean_abandoned(BlobStore& store, std::chrono::seconds older_than);

// The free forms: what each capability does, and nothing where the backend lacks it.
VersionedBlobs::Purge purge_noncurrent_versions(BlobStore& store, const std::string& prefix);
std::optional<BlobLocks::Lock> lock_of(BlobStore& store, const std::string& key);
void set_file_mode(BlobStore& store, uint32_t file_mode);
std::vector<std::string> access_findings(BlobStore& store, uint32_t file_mode);
void reload_credentials(BlobStore& store);
void never_make_again(BlobStore& store);
// The store's conditional writes, or kInvalidArgument naming the store, why it cannot, and which
// stores can, for `purpose` ("the create lease"). Before it answers, the server is tried under
// `probe_key` (written, then removed): a second create-if-absent and a write against a stale
// version must both be refused, or the server only pretends (an S3-compatible server that ignores
// If-None-Match / If-Match, an emulator without preconditions), and that is kInvalidArgument too.
ConditionalWrites& conditional_writes(BlobStore& store, const std::string& purpose, const std::string& probe_key);

}  // namespace etcdadm

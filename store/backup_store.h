// A backup store as a command opened it: the storage (any backend, store/blob_store.h) and the
// keys this process holds to open the encrypted backups and change-log segments in it
// (--identity, --passphrase-file and their environment variables). Every read of a backup starts
// from the handle a command opened, so the keys travel with the store as its credentials do,
// while the storage interface below knows nothing of encryption.
//
// Functions that read what may be encrypted take a BackupStore; those that only move blobs take
// the BlobStore (*handle). A handle made from a bare BlobStore holds no keys: reading an encrypted
// backup through it fails with kAuth, naming the flags that give a key.
#pragma once

#include <memory>
#include <utility>

#include "store/age.h"
#include "store/blob_store.h"

namespace etcdadm {

class BackupStore {
 public:
  // Owns `blobs`.
  explicit BackupStore(std::shared_ptr<BlobStore> blobs, std::shared_ptr<const age::Identities> keys = nullptr)
      : blobs_(std::move(blobs)), keys_(std::move(keys)) {}
  // Borrows `blobs`, which outlives the handle.
  explicit BackupStore(BlobStore& blobs, std::shared_ptr<const age::Identities> keys = nullptr)
      : blobs_(std::shared_ptr<BlobStore>(), &blobs), keys_(std::move(keys)) {}

  // The storage, for what only moves blobs.
  BlobStore& operator*() const { return *blobs_; }
  BlobStore* operator->() const { return blobs_.get(); }

  // nullptr: no key was given.
  const age::Identities* keys() const { return keys_.get(); }

 private:
  std::shared_ptr<BlobStore> blobs_;
  std::shared_ptr<const age::Identities> keys_;
};

}  // namespace etcdadm

// Backup store in a local directory (or any mounted filesystem: NFS, CSI volume).
// Atomic visibility: temp file in the target directory, fsync, link/rename, directory fsync.
#pragma once

#include "store/blob_store.h"

namespace etcdadm {

class LocalStore : public BlobStore {
 public:
  // `root` is created on first write, not here: a mistyped path must not silently become a store
  // for read commands.
  explicit LocalStore(std::string root);
  std::string url() const override;
  std::unique_ptr<BlobWriter> create(const std::string& key, bool overwrite) override;
  std::unique_ptr<BlobReader> open(const std::string& key) override;
  std::optional<BlobInfo> stat(const std::string& key) override;
  std::vector<BlobInfo> list(const std::string& prefix) override;
  void remove(const std::string& key) override;
  std::vector<std::string> remove_abandoned(std::chrono::seconds older_than) override;
  const std::string& root() const { return root_; }

 private:
  std::string path_of(const std::string& key) const;
  std::string root_;
};

}  // namespace etcdadm

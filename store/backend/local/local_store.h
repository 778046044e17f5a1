// Backup store in a local directory (or any mounted filesystem: NFS, CSI volume).
// Atomic visibility: temp file in the target directory, fsync, link/rename, directory fsync.
// Conditional writes: the blob's version is the SHA-256 of its contents; a writer holds an
// exclusive flock(2) on `.NAME.lock` beside blob NAME while it compares and replaces (on NFS, Linux
// turns flock into a whole-file fcntl lock, which the server arbitrates). Lock files are no blobs.
// Privacy: files and directories are created with exactly the store's mode (0600/0700 unless the
// store marker records another), whatever the umask.
#pragma once

#include "store/blob_capabilities.h"

namespace etcdadm {

class LocalStore : public BlobStore,
                   public LeftoverUploads,
                   public FileModes,
                   public ConditionalWrites,
                   public MadeOnFirstWrite {
 public:
  // `root` is created on first write, not here: a mistyped path must not silently become a store
  // for read commands.
  explicit LocalStore(std::string root);
  std::string url() const override;
  std::unique_ptr<BlobWriter> create(const std::string& key, bool overwrite) override;
  std::unique_ptr<BlobReader> open(const std::string& key) override;
  std::optional<BlobInfo> stat(const std::string& key) override;
  std::vector<BlobInfo> list(const std::string& prefix) override;
  std::vector<BlobInfo> list_range(const std::string& start_after, const std::string& end_before) override;
  void remove(const std::string& key) override;
  std::vector<std::string> remove_abandoned(std::chrono::seconds older_than) override;
  void set_file_mode(uint32_t file_mode) override { file_mode_ = file_mode; }
  std::vector<std::string> access_findings(uint32_t file_mode) override;
  std::optional<Versioned> read_versioned(const std::string& key, size_t limit) override;
  std::optional<std::string> write_if(const std::string& key, const std::string& contents,
                                      const std::string& expected) override;
  void never_make_again() override { make_root_ = false; }
  const std::string& root() const { return root_; }

 private:
  std::string path_of(const std::string& key) const;
  std::string root_;
  // Private until the store's marker says otherwise (FileModes::set_file_mode): a backup holds
  // every Secret of the cluster, so it is never readable by other users by default.
  uint32_t file_mode_ = 0600;
  bool make_root_ = true;  // MadeOnFirstWrite
};

// The mode of a store directory holding files of `file_mode`: the same bits plus search (x) for
// each class that may read (0600 -> 0700, 0640 -> 0750, 0660 -> 0770).
uint32_t store_directory_mode(uint32_t file_mode);

}  // namespace etcdadm

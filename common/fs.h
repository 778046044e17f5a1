// File-system helpers with the durability rules etcdadm relies on: data reaches the disk (fsync)
// before it becomes visible under its final name (rename), and the directory entry itself is made
// durable (directory fsync). Nothing half-written is ever visible under a final name.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace etcdadm {

// A file being written under a temporary name next to its final path. commit() fsyncs, renames to
// the final path and fsyncs the directory; destroying an uncommitted AtomicFile removes the temp file.
// Both act in the directory as it was opened at creation, even if it has been renamed since.
class AtomicFile {
 public:
  // Refuses (kAlreadyExists) when `path` exists and overwrite is false. `durable` = false skips the
  // fsyncs, for scratch files that are consumed and deleted right away (never for user data).
  AtomicFile(std::string path, mode_t mode = 0644, bool overwrite = false, bool durable = true);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t size);
  void commit();
  void abort();
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  std::string path_;
  std::string name_;       // path_'s file name
  std::string temp_name_;  // the temp file's name in the same directory
  std::string temp_path_;  // for messages; empty once committed or removed
  int dir_fd_ = -1;        // the directory, as opened when the file was created
  int fd_ = -1;
  bool overwrite_;
  bool durable_;
  uint64_t bytes_written_ = 0;
};

// etcdadm's cache directory for this user: /var/cache/etcdadm for root (etcdadm's place for release
// tarballs), else $XDG_CACHE_HOME/etcdadm or ~/.cache/etcdadm, else /tmp/etcdadm-cache-<uid>.
std::string user_cache_dir();
// Refuses (kInvalidArgument) a cache directory under `dir` that another user could have prepared:
// for user_cache_dir()'s /tmp fallback (a name anyone can create first), the directory is created
// 0700 when missing, and refused when it is a link, not a directory, another user's, or open to
// group or others. Its catalog and its etcd releases (binaries a drill runs) must be this user's
// alone. Other directories (the user's own home, /var/cache) are left as they are.
void check_cache_dir(const std::string& dir);

// A private directory (mode 0700) under $TMPDIR (default /tmp), removed with everything in it on
// destruction: for scratch copies that must not outlive the command.
// A private (0700) temp dir in $TMPDIR (else /tmp) named <prefix>-XXXXXX, removed with
// everything in it by the destructor. It may hold a decrypted snapshot, and a process killed with
// SIGKILL runs no destructor: each dir is held by an flock on its `.lock` for its lifetime, and
// creating one removes the dirs of the same prefix whose lock nobody holds any more (and lockless
// ones, killed before their lock existed, once a minute old).
class ScratchDir {
 public:
  // `parent`: where to make it ("": $TMPDIR, else /tmp).
  explicit ScratchDir(const std::string& prefix = "etcdadm", const std::string& parent = "");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int lock_fd_ = -1;
};

// An flock held on `path` (created 0600 when missing) for the object's lifetime, so that two runs
// of one command on one thing exclude each other; a killed holder releases it with its process.
// Throws kAlreadyExists with `what` when another process holds it.
class ExclusiveLock {
 public:
  ExclusiveLock(const std::string& path, const std::string& what);
  ~ExclusiveLock();
  ExclusiveLock(const ExclusiveLock&) = delete;
  ExclusiveLock& operator=(const ExclusiveLock&) = delete;

 private:
  int fd_ = -1;
};

// Writes a whole small file atomically (temp + fsync + rename + dir fsync).
void write_file_atomic(const std::string& path, const std::string& contents, mode_t mode = 0644, bool overwrite = true);

// Reads a whole small file. Throws kNotFound when it does not exist.
std::string read_file(const std::string& path);

// Streams a file of any size to `chunk` in pieces of up to 1 MiB, read sequentially (the kernel
// is told so). Throws kNotFound when it does not exist.
void read_file_chunks(const std::string& path, const std::function<void(const uint8_t* data, size_t size)>& chunk);

// Whether two regular files hold the same bytes (false when either is missing or not regular).
// Sizes are compared first; the contents only when they agree.
bool same_file_contents(const std::string& a, const std::string& b);

// Writes all bytes to fd, retrying on EINTR and short writes.
void write_all(int fd, const void* data, size_t size, const std::string& path_for_errors);

// Reads exactly `size` bytes at `offset` (retrying short reads and EINTR). Returns false when the
// file ends first; throws kIo (naming `path_for_errors`) on a read error.
bool pread_exact(int fd, uint64_t offset, char* out, size_t size, const std::string& path_for_errors);

// Creates `path` (mode 0600; it must not exist), allocated to at least `allocate` bytes with
// fallocate (what is not written reads as zeros), writes `contents` at its start and fsyncs it.
// For files inside a directory that is not visible yet (a restore's staging dir): not atomic.
void write_new_synced_file(const std::string& path, const std::string& contents, uint64_t allocate = 0);

// fsync() of a directory, so that renames/creations inside it survive a crash.
void fsync_dir(const std::string& dir);
// rename(2) of `from` to `to` (one file system), both directories then fsynced: the move survives a
// crash. Throws kIo naming both.
void rename_durably(const std::string& from, const std::string& to);

// mkdir -p with exactly the given mode (umask not applied) for the directories it creates;
// directories that exist keep theirs.
void make_dirs(const std::string& path, mode_t mode = 0755);

// Takes every group and other permission bit off `root` and everything under it (symlinks are
// not followed). For trees written by tools whose modes depend on the umask they ran under.
void remove_group_and_other_access(const std::string& root);

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
// True when `dir` does not exist or exists and holds no entries.
bool is_missing_or_empty_dir(const std::string& dir);

// Whether the directory `dir` is where a filesystem is mounted, or at least on another filesystem
// than its parent (a data dir on its own disk). Such a directory cannot be renamed (EBUSY) and
// nothing renames into it from beside it (EXDEV): work on it happens inside it.
bool is_filesystem_root(const std::string& dir);

// The prefix of a restore's staging directory (restore/data_dir.h): beside the data dir, or inside
// it when the data dir is a filesystem root.
inline constexpr const char* kRestoreStagingPrefix = ".etcdadm-restore-";

// The prefix of old data set aside inside a data dir that is a filesystem root (set_aside_data_dir).
inline constexpr const char* kSetAsidePrefix = ".etcdadm-set-aside-";

// At a data dir that is a filesystem root: whether the entry `name` is not the data dir's own but
// the filesystem's (lost+found), a restore's staging dir or data set aside.
bool kept_at_filesystem_root(const std::string& name);

// Whether a data dir holds no data: it does not exist, is empty, or is a filesystem root holding
// only what the filesystem (lost+found) or a restore's staging dir put there.
bool is_empty_data_dir(const std::string& dir);

// The device (st_dev) `path` is on, or its nearest existing ancestor's when it does not exist: a
// directory that moved to another device is a volume mounted or unmounted over it.
uint64_t device_of_path(const std::string& path);

// Moves a data dir's contents out of the way, kept for a person, and leaves it empty (mode 0700):
// renamed to "<dir>.set-aside-<label>" beside it, or, when it is a filesystem root (no rename
// leaves it), moved inside it into "<dir>/.etcdadm-set-aside-<label>". Returns where they went, ""
// when there was nothing. An existing destination is never overwritten (kAlreadyExists).
std::string set_aside_data_dir(const std::string& dir, const std::string& label);

// Deletes the data set aside from `dir` (set_aside_data_dir) under labels that start with
// `label_prefix`, beside it or inside it; returns what it deleted. Keeps a host from filling its
// disk with copies that only the newest one of is worth looking at.
std::vector<std::string> remove_set_asides(const std::string& dir, const std::string& label_prefix);

// Removes a data dir; one that is a filesystem root is emptied instead (the mount stays, and so
// does its lost+found). Missing is fine.
void remove_data_dir(const std::string& dir);

// Throws (with the reason: a read-only filesystem, a permission) unless this process can create
// entries in the existing directory `dir`. `what` says what the entries were for.
void require_writable_dir(const std::string& dir, const std::string& what);

// Removes a file or a directory tree; missing paths are fine.
void remove_all(const std::string& path);

// Parent directory of a path ("." for a bare name); the path is normalised first.
std::string parent_dir(const std::string& path);

// A short random hex string for temp names (not for security).
std::string random_suffix();

// Absolute form of a path (no symlink resolution), for messages and stable catalog keys.
std::string absolute_path(const std::string& path);

// The path with symlinks resolved, or its absolute form when it cannot be (it does not exist):
// whether two paths name one directory.
std::string real_path(const std::string& path);

// "/a/b/" -> "/a/b"; "/" stays.
std::string strip_trailing_slashes(std::string path);

}  // namespace etcdadm

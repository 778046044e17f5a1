#include "store/backend/local/local_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <utility>

#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/text.h"
#include "common/unique_fd.h"

namespace etcdadm {

namespace stdfs = std::filesystem;

namespace {

class LocalWriter : public BlobWriter {
 public:
  LocalWriter(const std::string& path, mode_t mode, bool overwrite, std::string root)
      : file_(path, mode, overwrite), root_(std::move(root)) {}
  ~LocalWriter() override { abort(); }
  void write(const uint8_t* d, size_t n) override { file_.write(d, n); }
  void commit() override {
    file_.commit();
    committed_ = true;
  }
  void abort() override {
    if (committed_) return;
    file_.abort();
    // Leave no empty backup directory behind (rmdir fails harmlessly when it holds anything).
    std::string dir = parent_dir(file_.path());
    if (dir != root_) ::rmdir(dir.c_str());
  }
  uint64_t bytes_written() const override { return file_.bytes_written(); }

 private:
  AtomicFile file_;
  std::string root_;
  bool committed_ = false;
};

class LocalReader : public BlobReader {
 public:
  // Takes over `fd`, opened beneath the store root (open_parent_beneath, then openat).
  LocalReader(int fd, std::string path) : path_(std::move(path)), fd_(fd) {
    struct stat st;
    if (::fstat(fd_, &st) != 0) throw_errno("cannot stat", path_, errno);
    size_ = static_cast<uint64_t>(st.st_size);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~LocalReader() override {
    if (fd_ >= 0) ::close(fd_);
  }
  size_t read(uint8_t* buf, size_t n) override {
    for (;;) {
      ssize_t r = ::read(fd_, buf, n);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw_errno("cannot read", path_, errno);
      return static_cast<size_t>(r);
    }
  }
  uint64_t size() const override { return size_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

[[noreturn]] void throw_link(const std::string& path) {
  throw Error(ErrorKind::kCorrupt,
              path + " is a symbolic link; a backup store holds only regular files and directories",
              "replace the link with what it points to, or remove it");
}

// The directory holding `key` (beneath `root`, every component opened with O_NOFOLLOW) and the
// key's last component. O_NOFOLLOW on the whole path covers only its last component: a store
// writer's `name/link -> /var/lib/etcd/member/snap` would make a root restore read `name/link/db`,
// the live database. -1 with errno ENOENT/ENOTDIR when a directory on the way does not exist.
std::pair<int, std::string> open_parent_beneath(const std::string& root, const std::string& key) {
  UniqueFd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));  // the root itself is the user's path
  if (dir.get() < 0) return {-1, ""};
  size_t start = 0;
  for (size_t slash; (slash = key.find('/', start)) != std::string::npos; start = slash + 1) {
    std::string component = key.substr(start, slash - start);
    int next = ::openat(dir.get(), component.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      int err = errno;
      struct stat st;
      if ((err == ELOOP || err == ENOTDIR) && ::fstatat(dir.get(), component.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        throw_link(root + "/" + key.substr(0, slash));
      }
      errno = err;
      return {-1, ""};
    }
    dir.reset(next);
  }
  return {dir.release(), key.substr(start)};
}

bool is_temp_name(const std::string& filename) {
  return !filename.empty() && filename[0] == '.' && filename.find(".tmp-") != std::string::npos;
}

// `.NAME.lock`: what a conditional write of NAME holds while it compares and replaces. Never a blob,
// and never removed (a lock file unlinked while held would let a second writer lock a new one).
std::string lock_name_of(const std::string& leaf) { return "." + leaf + ".lock"; }
bool is_lock_name(const std::string& filename) {
  return filename.size() > 6 && filename[0] == '.' && filename.compare(filename.size() - 5, 5, ".lock") == 0;
}

}  // namespace

uint32_t store_directory_mode(uint32_t file_mode) {
  uint32_t search = (file_mode & 0444) >> 2;
  return (file_mode & 0777) | search | 0100;
}

namespace {

// The chmod that takes a store written with looser modes down to `file_mode`.
std::string tightening_chmod(uint32_t file_mode) {
  std::string group;
  if ((file_mode & 0060) == 0)
    group = "g-rwx,";
  else if ((file_mode & 0020) == 0)
    group = "g-w,";
  return group + "o-rwx";
}

}  // namespace

std::vector<std::string> LocalStore::access_findings(uint32_t file_mode) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!stdfs::is_directory(root_, ec)) return out;
  const uint32_t dir_mode = store_directory_mode(file_mode);
  struct Exposed {
    uint64_t count = 0;
    std::string example;
    uint32_t example_mode = 0;
  } files, dirs;
  // The root itself is left out: it is often a mount point or a directory the operator made for
  // several purposes, and what it exposes is the names of the backups, not their contents.
  for (stdfs::recursive_directory_iterator it(root_, stdfs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    uint32_t mode = st.st_mode & 07777;
    Exposed* e = nullptr;
    if (S_ISREG(st.st_mode) && (mode & ~file_mode & 0077) != 0) e = &files;
    if (S_ISDIR(st.st_mode) && (mode & ~dir_mode & 0077) != 0) e = &dirs;
    if (e == nullptr) continue;
    if (e->count++ == 0) {
      e->example = it->path().string();
      e->example_mode = mode;
    }
  }
  std::string fix = "chmod -R " + tightening_chmod(file_mode) + " " + root_;
  if (files.count > 0) {
    out.push_back(std::to_string(files.count) + " file(s) in store " + root_ +
                  " allow more access than the store's mode " + octal_mode(file_mode) + " (e.g. " + files.example +
                  " is " + octal_mode(files.example_mode) +
                  "): other users may read the cluster's data, Secrets included, from them; fix with `" + fix + "`");
  }
  if (dirs.count > 0) {
    out.push_back(std::to_string(dirs.count) + " directory(ies) in store " + root_ + " allow more access than " +
                  octal_mode(dir_mode) + " (e.g. " + dirs.example + " is " + octal_mode(dirs.example_mode) +
                  "); fix with `" + fix + "`");
  }
  return out;
}

LocalStore::LocalStore(std::string root) : root_(absolute_path(root)) {}

std::string LocalStore::url() const { return "file://" + root_; }

std::string LocalStore::path_of(const std::string& key) const {
  check_store_key(key);
  if (key.empty() || key.back() == '/') throw Error(ErrorKind::kInvalidArgument, "invalid blob key '" + key + "'");
  return root_ + "/" + key;
}

std::unique_ptr<BlobWriter> LocalStore::create(const std::string& key, bool overwrite) {
  std::string path = path_of(key);
  if (!make_root_ && !is_directory(root_)) {
    throw Error(ErrorKind::kNotFound, "store directory " + root_ + " does not exist any more",
                "it did when this process started: mount or move it back (a new empty store is not made in its place)");
  }
  std::string dir = parent_dir(path);
  // Another process's remove() drops a directory the moment it is empty, which a directory just
  // made here is until the writer's temp file is in it (three `etcdadm auto` starting at once
  // all make etcdadm-auto/probes/): made again when it vanished in between.
  for (int attempt = 1;; ++attempt) {
    bool existed = is_directory(dir);
    make_dirs(dir, store_directory_mode(file_mode_));
    // A new directory entry must itself be durable before files inside it matter.
    if (!existed) fsync_dir(parent_dir(dir));
    // Nothing is written through a link a store writer planted (a damage marker written by root
    // into `name/` -> /etc would land in /etc).
    auto [dir_fd, leaf] = open_parent_beneath(root_, key);
    if (dir_fd < 0) {
      if (errno == ENOENT && attempt < 5) continue;
      throw_errno("cannot open", dir, errno);
    }
    ::close(dir_fd);
    try {
      return std::make_unique<LocalWriter>(path, file_mode_, overwrite, root_);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kNotFound || attempt >= 5 || is_directory(dir)) throw;
    }
  }
}

std::unique_ptr<BlobReader> LocalStore::open(const std::string& key) {
  std::string path = path_of(key);
  if (!is_directory(root_)) {
    throw Error(ErrorKind::kNotFound, "store directory " + root_ + " does not exist", "check --store");
  }
  auto [dir_fd, leaf] = open_parent_beneath(root_, key);
  if (dir_fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) throw Error(ErrorKind::kNotFound, key + " not found in " + url());
    throw_errno("cannot open", path, errno);
  }
  UniqueFd dir(dir_fd);
  int fd = ::openat(dir.get(), leaf.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ELOOP) throw_link(path);
  if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
    throw Error(ErrorKind::kNotFound, key + " not found in " + url());
  if (fd < 0) throw_errno("cannot open", path, errno);
  return std::make_unique<LocalReader>(fd, path);
}

std::optional<BlobInfo> LocalStore::stat(const std::string& key) {
  std::string path = path_of(key);
  auto [dir_fd, leaf] = open_parent_beneath(root_, key);
  if (dir_fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    throw_errno("cannot stat", path, errno);
  }
  UniqueFd dir(dir_fd);
  struct stat st;
  if (::fstatat(dir.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {  // a link is no blob
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    throw_errno("cannot stat", path, errno);
  }
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  return BlobInfo{key, static_cast<uint64_t>(st.st_size),
                  static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000 + st.st_mtim.tv_nsec / 1000};
}

std::vector<BlobInfo> LocalStore::list(const std::string& prefix) {
  std::vector<BlobInfo> out;
  std::error_code ec;
  if (!stdfs::is_directory(root_, ec)) {
    throw Error(ErrorKind::kNotFound, "store directory " + root_ + " does not exist",
                "check --store (a new store is created by the first `backup save`)");
  }
  // Start the walk at the deepest directory the prefix names, so listing one backup is cheap.
  std::string start_rel = prefix.substr(0, prefix.rfind('/') == std::string::npos ? 0 : prefix.rfind('/'));
  stdfs::path start = start_rel.empty() ? stdfs::path(root_) : stdfs::path(root_) / start_rel;
  if (!stdfs::is_directory(start, ec)) return out;
  stdfs::recursive_directory_iterator it(start, stdfs::directory_options::skip_permission_denied, ec), end;
  if (ec) throw Error(ErrorKind::kIo, "cannot list " + start.string() + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) throw Error(ErrorKind::kIo, "cannot list " + root_ + ": " + ec.message());
    if (it->symlink_status(ec).type() != stdfs::file_type::regular) continue;  // links are no blobs
    std::string name = it->path().filename().string();
    if (is_temp_name(name) || is_lock_name(name)) continue;  // uncommitted writes and locks are not blobs
    std::string key = it->path().lexically_relative(root_).string();
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0) continue;  // removed while listing
    out.push_back(BlobInfo{key, static_cast<uint64_t>(st.st_size),
                           static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000 + st.st_mtim.tv_nsec / 1000});
  }
  std::sort(out.begin(), out.end(), [](const BlobInfo& a, const BlobInfo& b) { return a.key < b.key; });
  return out;
}

std::vector<BlobInfo> LocalStore::list_range(const std::string& start_after, const std::string& end_before) {
  // Top-level names first (one readdir, no stat), then a walk of only the directories in range:
  // a store of 10,000 backups costs a readdir, not 40,000 stats.
  std::error_code ec;
  stdfs::directory_iterator it(root_, stdfs::directory_options::skip_permission_denied, ec), end;
  if (ec) {
    if (!stdfs::is_directory(root_)) return list("");  // its error names the missing store
    throw Error(ErrorKind::kIo, "cannot list " + root_ + ": " + ec.message());
  }
  std::vector<std::string> dirs;
  std::vector<BlobInfo> out;
  for (; it != end; it.increment(ec)) {
    if (ec) throw Error(ErrorKind::kIo, "cannot list " + root_ + ": " + ec.message());
    const std::string name = it->path().filename().string();
    if (name >= end_before) continue;
    // "name/..." keys sort between "name/" and "name/\xff" (std::string compares bytes as
    // unsigned); a plain file is the key `name` itself.
    // The entry's type as readdir gave it (no stat per entry); links are no blobs, as in list().
    if (it->is_symlink(ec)) continue;
    if (it->is_directory(ec)) {
      if (name + "/\xff" > start_after) dirs.push_back(name);
    } else if (it->is_regular_file(ec) && name > start_after && !is_temp_name(name) && !is_lock_name(name)) {
      if (auto info = stat(name)) out.push_back(std::move(*info));
    }
  }
  for (const auto& d : dirs) {
    for (auto& b : list(d + "/")) {
      if (b.key > start_after && b.key < end_before) out.push_back(std::move(b));
    }
  }
  std::sort(out.begin(), out.end(), [](const BlobInfo& a, const BlobInfo& b) { return a.key < b.key; });
  return out;
}

void LocalStore::remove(const std::string& key) {
  std::string path = path_of(key);
  auto [dir_fd, leaf] = open_parent_beneath(root_, key);
  if (dir_fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return;
    throw_errno("cannot remove", path, errno);
  }
  UniqueFd parent(dir_fd);
  if (::unlinkat(parent.get(), leaf.c_str(), 0) != 0) {
    if (errno == ENOENT) return;  // nothing removed: a directory another writer just made stays
    throw_errno("cannot remove", path, errno);
  }
  // Drop the directory once its last blob is gone (backup directories are removed this way).
  std::string dir = parent_dir(path);
  if (dir != root_ && ::rmdir(dir.c_str()) == 0) fsync_dir(parent_dir(dir));
}

namespace {
std::string content_version(const std::string& contents) {
  return "sha256:" + to_hex(sha256_of(contents.data(), contents.size()));
}
}  // namespace

std::optional<ConditionalWrites::Versioned> LocalStore::read_versioned(const std::string& key, size_t limit) {
  if (!stat(key)) return std::nullopt;
  try {
    std::string contents = read_small(key, limit);
    std::string version = content_version(contents);
    return Versioned{std::move(contents), std::move(version)};
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound) return std::nullopt;  // removed since the stat
    throw;
  }
}

std::optional<std::string> LocalStore::write_if(const std::string& key, const std::string& contents,
                                                const std::string& expected) {
  std::string path = path_of(key);
  // create() makes the directories and refuses links on the way; the writer is used below.
  auto writer = create(key, /*overwrite=*/true);
  auto [dir_fd, leaf] = open_parent_beneath(root_, key);
  if (dir_fd < 0) throw_errno("cannot open", parent_dir(path), errno);
  UniqueFd dir(dir_fd);
  const std::string lock_name = lock_name_of(leaf);
  UniqueFd lock(::openat(dir.get(), lock_name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, file_mode_ & 0666));
  if (lock.get() < 0) throw_errno("cannot open", parent_dir(path) + "/" + lock_name, errno);
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) throw_errno("cannot lock", parent_dir(path) + "/" + lock_name, errno);
  }
  auto current = read_versioned(key, 16 << 20);
  const std::string now = current ? current->version : "";
  if (now != expected) {
    writer->abort();
    return std::nullopt;
  }
  writer->write(reinterpret_cast<const uint8_t*>(contents.data()), contents.size());
  writer->commit();
  return content_version(contents);  // the lock goes with `lock`'s descriptor
}

std::vector<std::string> LocalStore::remove_abandoned(std::chrono::seconds older_than) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!stdfs::is_directory(root_, ec)) return removed;
  auto cutoff = stdfs::file_time_type::clock::now() - older_than;
  std::vector<stdfs::path> stale;
  for (stdfs::recursive_directory_iterator it(root_, stdfs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && is_temp_name(it->path().filename().string()) && it->last_write_time(ec) < cutoff) {
      stale.push_back(it->path());
    }
  }
  for (const auto& p : stale) {
    if (!stdfs::remove(p, ec)) continue;
    removed.push_back("temp file " + p.string());
    // A backup directory holding nothing but that temp file was never a backup.
    stdfs::path dir = p.parent_path();
    if (dir != stdfs::path(root_) && stdfs::is_empty(dir, ec)) stdfs::remove(dir, ec);
  }
  return removed;
}

}  // namespace etcdadm

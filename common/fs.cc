#include "common/fs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "common/error.h"
#include "common/text.h"

namespace etcdadm {

namespace stdfs = std::filesystem;

std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string s(12, '0');
  uint64_t v = rng();
  for (auto& c : s) {
    c = hex[v & 0xf];
    v >>= 4;
  }
  return s;
}

std::string parent_dir(const std::string& path) {
  stdfs::path p = stdfs::path(path).lexically_normal();
  if (p.has_filename() == false) p = p.parent_path();  // "dir/" -> "dir"
  auto parent = p.parent_path();
  return parent.empty() ? "." : parent.string();
}

std::string real_path(const std::string& path) {
  std::error_code ec;
  auto p = stdfs::canonical(path, ec);
  return ec ? absolute_path(path) : p.string();
}

std::string strip_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  auto abs = stdfs::absolute(path, ec);
  if (ec) return path;
  auto s = abs.lexically_normal().string();
  if (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool pread_exact(int fd, uint64_t offset, char* out, size_t size, const std::string& path_for_errors) {
  size_t done = 0;
  while (done < size) {
    ssize_t r = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw_errno("cannot read", path_for_errors, errno);
    if (r == 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

void write_new_synced_file(const std::string& path, const std::string& contents, uint64_t allocate) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno("cannot create", path, errno);
  try {
    if (allocate > contents.size()) {
      int err = ::posix_fallocate(fd, 0, static_cast<off_t>(allocate));
      if (err != 0) throw_errno("cannot allocate " + std::to_string(allocate) + " bytes for", path, err);
    }
    write_all(fd, contents.data(), contents.size(), path);
    if (::fsync(fd) != 0) throw_errno("cannot sync", path, errno);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

void write_all(int fd, const void* data, size_t size, const std::string& path_for_errors) {
  auto* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot write", path_for_errors, errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

namespace {

// Some filesystems (e.g. certain FUSE mounts) do not support directory fsync; that is not data loss.
void fsync_open_dir(int fd, const std::string& dir) {
  if (::fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP) throw_errno("cannot fsync directory", dir, errno);
}

}  // namespace

void rename_durably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) throw_errno("cannot move " + from + " to", to, errno);
  fsync_dir(std::filesystem::path(from).parent_path().string());
  fsync_dir(std::filesystem::path(to).parent_path().string());
}

void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open directory", dir, errno);
  try {
    fsync_open_dir(fd, dir);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

AtomicFile::AtomicFile(std::string path, mode_t mode, bool overwrite, bool durable)
    : path_(std::move(path)), overwrite_(overwrite), durable_(durable) {
  if (!overwrite_ && path_exists(path_)) {
    throw Error(ErrorKind::kAlreadyExists, "refusing to overwrite existing file " + path_,
                "choose another path or remove the file first");
  }
  stdfs::path p(path_);
  std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
  name_ = p.filename().string();
  temp_name_ = "." + name_ + ".tmp-" + random_suffix();
  temp_path_ = (p.parent_path() / temp_name_).string();
  // Every later step is relative to the directory as opened here: a write that outlives a rename
  // of its directory (a store moved away mid-backup) commits or removes its temp file there,
  // instead of failing on the old path and leaving the temp file behind.
  dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) throw_errno("cannot open directory", dir, errno);
  fd_ = ::openat(dir_fd_, temp_name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd_ < 0) {
    int err = errno;
    ::close(dir_fd_);
    dir_fd_ = -1;
    throw_errno("cannot create", temp_path_, err);
  }
  // open() applies the umask; files such as keys must end up with exactly the requested mode.
  ::fchmod(fd_, mode);
}

AtomicFile::~AtomicFile() {
  abort();
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

void AtomicFile::write(const void* data, size_t size) {
  if (fd_ < 0) throw Error(ErrorKind::kInternal, "write to a closed file " + temp_path_);
  write_all(fd_, data, size, temp_path_);
  bytes_written_ += size;
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error(ErrorKind::kInternal, "commit of a closed file " + temp_path_);
  if (durable_ && ::fsync(fd_) != 0) throw_errno("cannot fsync", temp_path_, errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw_errno("cannot close", temp_path_, errno);
  }
  fd_ = -1;
  if (!overwrite_) {
    // link() fails with EEXIST instead of silently replacing a file another writer committed.
    if (::linkat(dir_fd_, temp_name_.c_str(), dir_fd_, name_.c_str(), 0) != 0) {
      int err = errno;
      ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
      temp_path_.clear();
      if (err == EEXIST) throw Error(ErrorKind::kAlreadyExists, "file appeared while writing: " + path_);
      throw_errno("cannot create", path_, err);
    }
    ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
  } else if (::renameat(dir_fd_, temp_name_.c_str(), dir_fd_, name_.c_str()) != 0) {
    int err = errno;
    ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
    temp_path_.clear();
    throw_errno("cannot rename into place", path_, err);
  }
  temp_path_.clear();
  if (durable_) fsync_open_dir(dir_fd_, parent_dir(path_));
}

void AtomicFile::abort() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) {
    ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
    temp_path_.clear();
  }
}

void write_file_atomic(const std::string& path, const std::string& contents, mode_t mode, bool overwrite) {
  AtomicFile f(path, mode, overwrite);
  f.write(contents.data(), contents.size());
  f.commit();
}

namespace {
std::string tmp_cache_fallback() { return "/tmp/etcdadm-cache-" + std::to_string(::geteuid()); }
}  // namespace

void check_cache_dir(const std::string& dir) {
  const std::string fallback = tmp_cache_fallback();
  if (dir != fallback && dir.rfind(fallback + "/", 0) != 0) return;
  if (::mkdir(fallback.c_str(), 0700) != 0 && errno != EEXIST) throw_errno("cannot create", fallback, errno);
  struct stat st {};
  if (::lstat(fallback.c_str(), &st) != 0) throw_errno("cannot inspect", fallback, errno);
  std::string wrong;
  if (S_ISLNK(st.st_mode))
    wrong = "a symbolic link";
  else if (!S_ISDIR(st.st_mode))
    wrong = "not a directory";
  else if (st.st_uid != ::geteuid())
    wrong = "owned by uid " + std::to_string(st.st_uid);
  else if ((st.st_mode & 077) != 0)
    wrong = "open to group or others (mode " + octal_mode(st.st_mode & 07777) + ")";
  if (!wrong.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "refusing the cache directory " + fallback + ": it is " + wrong +
                    ", so another user could have prepared it (its catalog, its etcd releases)",
                "set HOME or XDG_CACHE_HOME (or ETCDADM_CATALOG and --cache-dir), or remove " + fallback);
  }
}

std::string user_cache_dir() {
  if (::geteuid() == 0) return "/var/cache/etcdadm";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') return std::string(x) + "/etcdadm";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return std::string(h) + "/.cache/etcdadm";
  return tmp_cache_fallback();  // checked before use: check_cache_dir
}

namespace {

constexpr const char* kScratchLock = ".lock";

// Best effort, never throws: the dirs of `prefix` in `parent` that a killed process left.
void remove_abandoned_scratch_dirs(const std::string& parent, const std::string& prefix) {
  std::error_code ec;
  const std::string start = prefix + "-";
  for (const auto& e : std::filesystem::directory_iterator(parent, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() != start.size() + 6 || name.compare(0, start.size(), start) != 0) continue;
    std::error_code err;
    if (!e.is_directory(err) || e.is_symlink(err)) continue;
    int fd = ::open((e.path() / kScratchLock).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    bool abandoned;
    if (fd >= 0) {
      abandoned = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
      ::close(fd);
    } else {
      auto made = std::filesystem::last_write_time(e.path(), err);
      abandoned = !err && made < std::filesystem::file_time_type::clock::now() - std::chrono::minutes(1);
    }
    if (abandoned) std::filesystem::remove_all(e.path(), err);  // another user's: not ours to remove, fails
  }
}

}  // namespace

ExclusiveLock::ExclusiveLock(const std::string& path, const std::string& what) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0) throw_errno("cannot open lock file", path, errno);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int saved = errno;
    ::close(fd_);
    fd_ = -1;
    if (saved == EWOULDBLOCK) {
      throw Error(ErrorKind::kAlreadyExists, what + " (" + path + " is locked)",
                  "wait for the other run to finish; a killed one releases the lock with its process");
    }
    throw_errno("cannot lock", path, saved);
  }
}

ExclusiveLock::~ExclusiveLock() {
  if (fd_ >= 0) ::close(fd_);
}

ScratchDir::ScratchDir(const std::string& prefix, const std::string& in) {
  const char* tmp = std::getenv("TMPDIR");
  std::string parent = !in.empty() ? in : tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  remove_abandoned_scratch_dirs(parent, prefix);
  std::string pattern = parent + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw_errno("cannot create temp dir", pattern, errno);
  path_ = pattern;
  // The lock file appears under its name already locked (made and locked under another name,
  // then renamed): another process cleaning up would otherwise find it unlocked between our
  // open and our flock, take the dir for a killed process's and remove it under us. Until the
  // rename the dir has no lock file, and one that young is never taken for abandoned.
  const std::string lock = path_ + "/" + kScratchLock, making = lock + ".new";
  lock_fd_ = ::open(making.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0 || ::rename(making.c_str(), lock.c_str()) != 0) {
    int saved = errno;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    throw_errno("cannot lock", lock, saved);
  }
}

ScratchDir::~ScratchDir() {
  try {
    remove_all(path_);
  } catch (...) {
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string read_file(const std::string& path) {
  std::string out;
  read_file_chunks(path,
                   [&](const uint8_t* data, size_t size) { out.append(reinterpret_cast<const char*>(data), size); });
  return out;
}

void read_file_chunks(const std::string& path, const std::function<void(const uint8_t* data, size_t size)>& chunk) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open", path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::vector<uint8_t> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot read", path, errno);
    }
    if (n == 0) break;
    chunk(buf.data(), static_cast<size_t>(n));
  }
}

bool same_file_contents(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  if (!S_ISREG(sa.st_mode) || !S_ISREG(sb.st_mode) || sa.st_size != sb.st_size) return false;
  int fb = ::open(b.c_str(), O_RDONLY | O_CLOEXEC);
  if (fb < 0) return false;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fb};
  std::vector<uint8_t> other(1 << 20);
  bool same = true;
  uint64_t at = 0;
  read_file_chunks(a, [&](const uint8_t* data, size_t size) {
    if (!same) return;
    size_t got = 0;
    while (got < size) {
      ssize_t n = ::pread(fb, other.data() + got, size - got, static_cast<off_t>(at + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    same = got == size && std::memcmp(data, other.data(), size) == 0;
    at += size;
  });
  return same && at == static_cast<uint64_t>(sb.st_size);
}

void make_dirs(const std::string& path, mode_t mode) {
  std::string cur;
  stdfs::path p = stdfs::path(path).lexically_normal();
  for (const auto& part : p) {
    cur = cur.empty() ? part.string() : (stdfs::path(cur) / part).string();
    if (cur == "/" || part.empty()) continue;
    if (::mkdir(cur.c_str(), mode) == 0) {
      // mkdir() applies the umask; a directory we create gets exactly the mode asked for, so that a
      // permissive umask cannot open a private directory and a strict one cannot close a shared one.
      if (::chmod(cur.c_str(), mode) != 0) throw_errno("cannot set the mode of", cur, errno);
    } else if (errno != EEXIST) {
      throw_errno("cannot create directory", cur, errno);
    }
  }
  if (!is_directory(path)) throw Error(ErrorKind::kIo, "not a directory: " + path);
}

void remove_group_and_other_access(const std::string& root) {
  auto tighten = [](const stdfs::path& p) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) throw_errno("cannot stat", p.string(), errno);
    if (S_ISLNK(st.st_mode) || (st.st_mode & 077) == 0) return;
    if (::chmod(p.c_str(), st.st_mode & 07700) != 0) throw_errno("cannot set the mode of", p.string(), errno);
  };
  tighten(root);
  std::error_code ec;
  for (stdfs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) tighten(it->path());
  if (ec) throw Error(ErrorKind::kIo, "cannot walk " + root + ": " + ec.message());
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_missing_or_empty_dir(const std::string& dir) {
  std::error_code ec;
  if (!stdfs::exists(dir, ec)) return true;
  if (!stdfs::is_directory(dir, ec)) return false;
  return stdfs::directory_iterator(dir, ec) == stdfs::directory_iterator();
}

bool is_filesystem_root(const std::string& dir) {
  struct statx sx {};
  if (::statx(AT_FDCWD, dir.c_str(), 0, STATX_BASIC_STATS, &sx) == 0 &&
      (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)) {
    if (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) return true;
  }
  // Kernels before 5.8 do not report mount roots; a bind mount of a directory of the parent's own
  // filesystem is then missed, but rename() would still only fail, never move the wrong thing.
  struct stat st, parent;
  if (::stat(dir.c_str(), &st) != 0 || ::stat((dir + "/..").c_str(), &parent) != 0) return false;
  return st.st_dev != parent.st_dev || st.st_ino == parent.st_ino;
}

bool kept_at_filesystem_root(const std::string& name) {
  return name == "lost+found" || name.rfind(kRestoreStagingPrefix, 0) == 0 || name.rfind(kSetAsidePrefix, 0) == 0;
}

uint64_t device_of_path(const std::string& path) {
  std::filesystem::path p = std::filesystem::absolute(path);
  for (;;) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) return static_cast<uint64_t>(st.st_dev);
    if (errno != ENOENT && errno != ENOTDIR) throw_errno("cannot stat", p.string(), errno);
    if (!p.has_relative_path()) return 0;
    p = p.parent_path();
  }
}

bool is_empty_data_dir(const std::string& dir) {
  if (is_missing_or_empty_dir(dir)) return true;
  if (!is_directory(dir) || !is_filesystem_root(dir)) return false;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(dir, ec)) {
    if (!kept_at_filesystem_root(e.path().filename().string())) return false;
  }
  return !ec;
}

std::string set_aside_data_dir(const std::string& dir, const std::string& label) {
  if (is_empty_data_dir(dir)) return "";
  if (!is_filesystem_root(dir)) {
    const std::string aside = dir + ".set-aside-" + label;
    if (path_exists(aside))
      throw Error(ErrorKind::kAlreadyExists, aside + " exists already: not setting " + dir + " aside over it");
    if (::rename(dir.c_str(), aside.c_str()) != 0) throw_errno("cannot set aside", dir, errno);
    make_dirs(dir, 0700);
    return aside;
  }
  const std::string aside = dir + "/" + kSetAsidePrefix + label;
  if (path_exists(aside))
    throw Error(ErrorKind::kAlreadyExists, aside + " exists already: not setting " + dir + " aside over it");
  make_dirs(aside, 0700);
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : stdfs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!kept_at_filesystem_root(name)) names.push_back(name);
  }
  if (ec) throw Error(ErrorKind::kIo, "cannot list " + dir + ": " + ec.message());
  for (const auto& name : names) {
    if (::rename((dir + "/" + name).c_str(), (aside + "/" + name).c_str()) != 0)
      throw_errno("cannot set aside", dir + "/" + name, errno);
  }
  return aside;
}

std::vector<std::string> remove_set_asides(const std::string& dir, const std::string& label_prefix) {
  const stdfs::path d(dir);
  // Beside an ordinary data dir, or inside one that is a filesystem root: both are looked at, since
  // a data dir can have been mounted or unmounted between two set-asides.
  const std::vector<std::pair<stdfs::path, std::string>> places = {
      {d.parent_path(), d.filename().string() + ".set-aside-" + label_prefix},
      {d, std::string(kSetAsidePrefix) + label_prefix}};
  std::vector<std::string> removed;
  for (const auto& [parent, prefix] : places) {
    std::error_code ec;
    std::vector<std::string> found;
    for (const auto& e : stdfs::directory_iterator(parent, ec)) {
      if (e.path().filename().string().rfind(prefix, 0) == 0) found.push_back(e.path().string());
    }
    for (const auto& path : found) {
      remove_all(path);
      removed.push_back(path);
    }
  }
  return removed;
}

void remove_data_dir(const std::string& dir) {
  if (!is_directory(dir) || !is_filesystem_root(dir)) {
    remove_all(dir);
    return;
  }
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(dir, ec)) {
    if (e.path().filename() != "lost+found") remove_all(e.path().string());
  }
  if (ec) throw Error(ErrorKind::kIo, "cannot list " + dir + ": " + ec.message());
}

void require_writable_dir(const std::string& dir, const std::string& what) {
  if (::access(dir.c_str(), W_OK | X_OK) == 0) return;
  int err = errno;
  if (err == EROFS) {
    throw Error(ErrorKind::kIo, "cannot " + what + ": " + dir + " is on a read-only filesystem",
                "remount it read-write (mount -o remount,rw), or give a data dir on a writable filesystem");
  }
  throw_errno("cannot " + what + ": no write access to", dir, err);
}

void remove_all(const std::string& path) {
  std::error_code ec;
  stdfs::remove_all(path, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot remove " + path + ": " + ec.message());
}

}  // namespace etcdadm

#include "common/file_users.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "common/error.h"

namespace etcdadm {

namespace {

namespace stdfs = std::filesystem;

// The directory as the kernel names it in /proc/<pid>/fd links (symlinks resolved), with a
// trailing '/' so that /var/lib/etcd does not match /var/lib/etcd2.
std::string canonical_prefix(const std::string& dir) {
  std::error_code ec;
  stdfs::path p = stdfs::canonical(dir, ec);
  std::string s = ec ? stdfs::absolute(dir).lexically_normal().string() : p.string();
  if (s.empty() || s.back() != '/') s += '/';
  return s;
}

std::string command_line(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw) {
    if (c == '\0' || c == '\n' || c == '\r' || c == '\t') c = ' ';  // one line in a message
  }
  if (raw.size() > 200) raw = raw.substr(0, 200) + " ...";
  return raw;
}

// Whether another open file description holds a lock on `path` (probed without blocking and
// without taking the lock for longer than the probe).
bool is_locked(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  bool locked = false;
  // flock(): bbolt's lock on member/snap/db, and etcd's WAL lock where OFD locks are missing.
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    locked = errno == EWOULDBLOCK;
  } else {
    ::flock(fd, LOCK_UN);
  }
  // OFD and POSIX record locks: etcd's fileutil locks WAL files with F_OFD_SETLK on Linux.
  if (!locked) {
    struct flock fl {};
    fl.l_type = F_RDLCK;
    fl.l_whence = SEEK_SET;
    if (::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) locked = true;
  }
  ::close(fd);
  return locked;
}

}  // namespace

namespace {

// Processes other than this one with an open file whose /proc/<pid>/fd link `matches`: one
// FileHolder each, naming the first such link.
std::vector<FileHolder> processes_with_open(const std::function<bool(const std::string&)>& matches) {
  std::vector<FileHolder> out;
  const pid_t self = ::getpid();
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid == self) continue;
    std::string fd_dir = "/proc/" + std::string(e->d_name) + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (fds == nullptr) continue;  // gone, or another user's process (not root)
    while (dirent* f = ::readdir(fds)) {
      if (f->d_name[0] == '.') continue;
      char target[4096];
      ssize_t n = ::readlink((fd_dir + "/" + f->d_name).c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      std::string t(target, static_cast<size_t>(n));
      if (matches(t)) {
        char exe[4096];
        ssize_t m = ::readlink(("/proc/" + std::string(e->d_name) + "/exe").c_str(), exe, sizeof(exe) - 1);
        out.push_back({static_cast<pid_t>(pid), command_line(static_cast<pid_t>(pid)), t,
                       m > 0 ? std::string(exe, static_cast<size_t>(m)) : std::string()});
        break;
      }
    }
    ::closedir(fds);
  }
  ::closedir(proc);
  return out;
}

// The inodes of the TCP sockets listening on `port` (/proc/net/tcp and tcp6: the local address
// "HEXIP:HEXPORT" in the second column, the state in the fourth, 0A = LISTEN, the inode in the tenth).
std::set<std::string> listening_socket_inodes(int port) {
  std::set<std::string> inodes;
  char want[8];
  std::snprintf(want, sizeof(want), "%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode))
        continue;
      auto colon = local.rfind(':');
      if (colon == std::string::npos || state != "0A" || local.substr(colon + 1) != want) continue;
      inodes.insert(inode);
    }
  }
  return inodes;
}

}  // namespace

std::vector<FileHolder> processes_holding(const std::string& dir) {
  const std::string prefix = canonical_prefix(dir);
  const std::string exact = prefix.substr(0, prefix.size() - 1);
  // A deleted file still held shows as "<path> (deleted)": it still counts.
  return processes_with_open([&](const std::string& t) { return t.rfind(prefix, 0) == 0 || t == exact; });
}

ListenCheck check_listen(const std::string& address, int port) {
  ListenCheck result;
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*v4);
  } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*v6);
  } else {
    throw Error(ErrorKind::kInvalidArgument, "'" + address + "' is not an IP address");
  }
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno("cannot open a socket to check", address + ":" + std::to_string(port), errno);
  // As Go's net.Listen does: a connection of an earlier listener in TIME_WAIT does not count.
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
  int err = errno;
  ::close(fd);
  if (rc == 0) return result;
  if (err == EADDRNOTAVAIL) {
    result.address_missing = true;
    return result;
  }
  if (err != EADDRINUSE) throw_errno("cannot check", address + ":" + std::to_string(port), err);
  result.in_use = true;
  std::set<std::string> inodes = listening_socket_inodes(port);
  auto holders = processes_with_open(
      [&](const std::string& t) { return t.rfind("socket:[", 0) == 0 && inodes.count(t.substr(8, t.size() - 9)) > 0; });
  if (!holders.empty()) result.holder = holders.front();
  return result;
}

std::vector<std::string> locked_files(const std::string& dir, const std::string& skipped_entries) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!stdfs::is_directory(dir, ec)) return out;
  for (auto it = stdfs::recursive_directory_iterator(dir, stdfs::directory_options::skip_permission_denied, ec);
       !ec && it != stdfs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code sec;
    if (!skipped_entries.empty() && it.depth() == 0 && it->path().filename().string().rfind(skipped_entries, 0) == 0) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(sec) && is_locked(it->path().string())) out.push_back(it->path().string());
  }
  return out;
}

namespace {

[[noreturn]] void throw_in_use(const std::string& dir, const std::vector<FileHolder>& holders, const std::string& what,
                               const std::string& hint) {
  std::string who;
  for (const auto& h : holders)
    who += "\n  PID " + std::to_string(h.pid) + ": " + h.command + " (holds " + h.file + ")";
  throw Error(ErrorKind::kInUse, "cannot " + what + " " + dir + ": it is in use by" + who, hint);
}

}  // namespace

void refuse_if_held_by_others(const std::string& dir, const std::string& expected_exe, const std::string& what,
                              const std::string& hint) {
  std::error_code ec;
  if (!stdfs::exists(dir, ec)) return;
  std::string expected = stdfs::weakly_canonical(expected_exe, ec).string();
  std::vector<FileHolder> others;
  for (auto& h : processes_holding(dir)) {
    if (h.exe != expected && h.exe != expected_exe) others.push_back(std::move(h));
  }
  if (!others.empty()) throw_in_use(dir, others, what, hint);
}

void refuse_if_in_use(const std::string& dir, const std::string& what, const std::string& hint,
                      const std::string& skipped_entries) {
  std::error_code ec;
  if (!stdfs::exists(dir, ec)) return;
  auto holders = processes_holding(dir);
  if (!skipped_entries.empty()) {
    const std::string skipped = canonical_prefix(dir) + skipped_entries;
    std::erase_if(holders, [&](const FileHolder& h) { return h.file.rfind(skipped, 0) == 0; });
  }
  if (!holders.empty()) throw_in_use(dir, holders, what, hint);
  auto locked = locked_files(dir, skipped_entries);
  if (!locked.empty()) {
    throw Error(ErrorKind::kInUse,
                "cannot " + what + " " + dir + ": " + locked.front() +
                    " is locked by a running process (one this user cannot see; etcd locks its db and WAL)",
                hint);
  }
}

bool wait_until_released(const std::string& dir, std::chrono::milliseconds timeout) {
  for (const auto until = std::chrono::steady_clock::now() + timeout; !processes_holding(dir).empty();) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

std::string holders_of(const std::string& dir) {
  std::string out;
  for (const auto& h : processes_holding(dir))
    out += (out.empty() ? "" : ", ") + std::to_string(h.pid) + " (" + h.command + ")";
  return out;
}

}  // namespace etcdadm

// A file descriptor closed when its owner goes out of scope (sockets, pipes, files opened with
// the raw calls that need one: O_NOFOLLOW, fsync of a directory, a daemon's stdio).
#pragma once

#include <unistd.h>

#include <utility>

namespace etcdadm {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  // Closes the one held (if any) and holds `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int get() const { return fd_; }
  // The descriptor, no longer closed here.
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace etcdadm

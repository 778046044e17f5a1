// Who is using a directory: the processes that hold files under it open, and whether any file in
// it is locked the way etcd locks its data (bbolt flock()s member/snap/db; the WAL's files carry
// OFD or flock locks). A data dir is replaced or deleted only when nothing uses it: etcd keeps
// writing into deleted files otherwise, and the "restored" member silently serves old data.
// And who is listening on a TCP port a member is about to listen on.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace etcdadm {

struct FileHolder {
  pid_t pid = 0;
  std::string command;  // its command line, space-separated (truncated)
  std::string file;     // one of the files it holds under the directory
  std::string exe;      // its executable (/proc/<pid>/exe), "" when not readable
};

// Processes other than this one with a file under `dir` open (from /proc/<pid>/fd; processes of
// other users are visible only to root).
std::vector<FileHolder> processes_holding(const std::string& dir);

// Waits until no process holds a file under `dir` (processes_holding), polling; false when some
// still do after `timeout`. How a caller that asked another process to stop etcd (a kubelet whose
// manifest left its directory) knows the member's data is no longer in use.
bool wait_until_released(const std::string& dir, std::chrono::milliseconds timeout);
// "pid (command), ..." of the processes holding files under `dir`, for messages.
std::string holders_of(const std::string& dir);

// Paths under `dir` that carry a lock another open file description holds (flock, POSIX or OFD).
// Sees locks of every process, also where /proc does not show the holder. Nothing in the entries of
// `dir` whose names start with `skipped_entries` (when given) is looked at.
std::vector<std::string> locked_files(const std::string& dir, const std::string& skipped_entries = {});

// Whether a server could listen on TCP `address`:`port` (an IP) now, probed by binding it as Go's
// net.Listen does (SO_REUSEADDR: connections in TIME_WAIT do not count).
struct ListenCheck {
  bool in_use = false;           // something listens there
  bool address_missing = false;  // `address` is none of this host's
  // The process listening (from /proc/net/tcp{,6} and /proc/<pid>/fd), when this user can see it.
  std::optional<FileHolder> holder;
};
ListenCheck check_listen(const std::string& address, int port);

// Throws Error(kInUse) naming the processes (PID and command) when `dir` is in use; `what` says what
// was about to happen ("restore into", "delete") and `hint` what to do (stop the member first).
// Files in the entries of `dir` whose names start with `skipped_entries` (restores' staging dirs
// inside a data dir on its own filesystem) do not count.
void refuse_if_in_use(const std::string& dir, const std::string& what, const std::string& hint,
                      const std::string& skipped_entries = {});

// The same, except for processes running `expected_exe` (the member's own etcd, which the caller is
// about to stop): any other holder refuses. Locks are not probed (the expected process holds them).
void refuse_if_held_by_others(const std::string& dir, const std::string& expected_exe, const std::string& what,
                              const std::string& hint);

}  // namespace etcdadm

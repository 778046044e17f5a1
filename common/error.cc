#include "common/error.h"

#include <cstring>

namespace etcdadm {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return "invalid argument";
    case ErrorKind::kNotFound:
      return "not found";
    case ErrorKind::kAlreadyExists:
      return "already exists";
    case ErrorKind::kInUse:
      return "in use";
    case ErrorKind::kInterrupted:
      return "interrupted";
    case ErrorKind::kCorrupt:
      return "corrupt data";
    case ErrorKind::kUnavailable:
      return "unavailable";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kTls:
      return "TLS error";
    case ErrorKind::kAuth:
      return "authentication/permission error";
    case ErrorKind::kIo:
      return "I/O error";
    case ErrorKind::kExternalTool:
      return "external tool failed";
    case ErrorKind::kInternal:
      return "internal error";
  }
  return "error";
}

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return 2;
    case ErrorKind::kNotFound:
      return 3;
    case ErrorKind::kAlreadyExists:
    case ErrorKind::kInUse:
      return 4;
    case ErrorKind::kInterrupted:
      return 130;  // cmd/ reports 128 + the signal actually received
    case ErrorKind::kCorrupt:
      return 5;
    case ErrorKind::kUnavailable:
    case ErrorKind::kTimeout:
    case ErrorKind::kTls:
      return 6;
    case ErrorKind::kAuth:
      return 7;
    case ErrorKind::kIo:
      return 8;
    case ErrorKind::kExternalTool:
      return 9;
    case ErrorKind::kInternal:
      return 1;
  }
  return 1;
}

void throw_errno(const std::string& what, const std::string& path, int err) {
  ErrorKind kind = ErrorKind::kIo;
  std::string hint;
  if (err == ENOENT) kind = ErrorKind::kNotFound;
  if (err == EACCES || err == EPERM) hint = "check the permissions of " + path + " (running as the right user?)";
  if (err == ENOSPC || err == EDQUOT) hint = "free space on the filesystem holding " + path;
  // A rename across mounts: a static pod manifest folder mounted on its own, whose manifest a stop
  // or a restore moves to the folder above it.
  if (err == EXDEV) hint = path + " is on another filesystem: a rename cannot move a file there";
  throw Error(kind, what + " " + path + ": " + std::strerror(err), hint);
}

}  // namespace etcdadm

// The one error type of etcdadm. Every failure is thrown as an Error that says what failed and,
// where we know it, what the operator should do next (the hint). cmd/ turns the kind into an exit
// status, so scripts can tell "not found" from "corrupt" from "cannot reach etcd".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace etcdadm {

enum class ErrorKind {
  kInvalidArgument,  // bad flag, bad URL, bad name: the user must change the command
  kNotFound,         // backup, file or key does not exist
  kAlreadyExists,    // refusing to overwrite something
  kInUse,            // a running process holds it (an etcd serving from the data dir)
  kCorrupt,          // data failed a hash, size or format check
  kUnavailable,      // endpoint refused, unreachable, not healthy
  kTimeout,          // deadline passed
  kTls,              // TLS handshake / certificate problem
  kAuth,             // wrong credentials, missing permission
  kIo,               // local disk / filesystem failure
  kExternalTool,     // a helper program (etcdctl, etcdutl) failed
  kInterrupted,      // SIGINT/SIGTERM stopped the work (exit 128 + the signal: 130, 143)
  kInternal,         // a bug
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, std::string hint = {})
      : std::runtime_error(std::move(message)), kind_(kind), hint_(std::move(hint)) {}

  ErrorKind kind() const { return kind_; }
  const std::string& hint() const { return hint_; }

  // Returns a copy whose message is prefixed with `context: `, keeping kind and hint.
  Error wrap(const std::string& context) const { return Error(kind_, context + ": " + what(), hint_); }

  // Whether the message contains `text` (etcd tells some refusals apart only by their text).
  bool mentions(const char* text) const { return std::string_view(what()).find(text) != std::string_view::npos; }

 private:
  ErrorKind kind_;
  std::string hint_;
};

const char* error_kind_name(ErrorKind kind);

// Process exit status for an error kind (documented in docs/operations.md).
int exit_code_for(ErrorKind kind);

// errno-based I/O failure: "<what> <path>: <strerror>".
[[noreturn]] void throw_errno(const std::string& what, const std::string& path, int err);

}  // namespace etcdadm

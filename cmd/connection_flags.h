// etcdctl-compatible connection flags (--endpoints, --cacert, --cert, --key, --user, --password,
// --dial-timeout, --command-timeout) on any subcommand; ETCDCTL_* variables fill what flags omit.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "etcd/connection.h"

namespace etcdadm::cli {

struct ConnectionFlags {
  std::string endpoints, cacert, cert, key, user, password, password_file, dial_timeout, command_timeout;
  bool insecure_skip_tls_verify = false;
  CLI::App* app = nullptr;
  void add_to(CLI::App* app);
  // Defaults <- ETCDCTL_* <- flags given on the command line; a user without a password gets it from
  // --password-file, else from a prompt when stdin is a terminal.
  ConnectionConfig resolve() const;
};

}  // namespace etcdadm::cli

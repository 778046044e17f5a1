// etcdctl-compatible connection flags (--endpoints, --cacert, --cert, --key, --user, --password,
// --dial-timeout, --command-timeout) on any subcommand; ETCDCTL_* variables fill what flags omit.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "etcdadm/connection.h"

namespace etcdadm::cli {

struct ConnectionFlags {
  std::string endpoints, cacert, cert, key, user, password, dial_timeout, command_timeout;
  CLI::App* app = nullptr;
  void add_to(CLI::App* app);
  // Defaults <- ETCDCTL_* <- flags given on the command line.
  ConnectionConfig resolve() const;
};

}  // namespace etcdadm::cli

// etcdctl-compatible connection flags (--endpoints, --cacert, --cert, --key, --user, --password,
// --dial-timeout, --command-timeout) on any subcommand; ETCDCTL_* variables fill what flags omit.
// --kubeadm-manifest reads the endpoint and the certificates from etcd's static pod manifest.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "etcd/connection.h"

namespace etcdadm::cli {

struct ConnectionFlags {
  std::string endpoints, cacert, cert, key, user, password, password_file, dial_timeout, command_timeout;
  std::string kubeadm_manifest;
  bool insecure_skip_tls_verify = false;
  CLI::App* app = nullptr;
  void add_to(CLI::App* app);
  // Defaults <- ETCDCTL_* <- --kubeadm-manifest <- flags given on the command line; a user without a password gets it
  // from
  // --password-file, else from a prompt when stdin is a terminal.
  ConnectionConfig resolve() const;
};

}  // namespace etcdadm::cli

// Wiring of `etcdadm certs ...`: check-expiration and renew.
#pragma once

#include <CLI/CLI.hpp>

namespace etcdadm::cli {

void add_certs_commands(CLI::App& app);

}  // namespace etcdadm::cli

// Wiring of the maintenance commands a person runs on a live cluster: `etcdadm defrag`, `etcdadm alarm list|recover`.
#pragma once

#include <CLI/CLI.hpp>

namespace etcdadm::cli {

void add_maintenance_commands(CLI::App& app);

}  // namespace etcdadm::cli

// Wiring of the self-management layer: `etcdadm seed` (the spec) and `etcdadm auto` (the
// controller; `auto status`, `auto pause`, `auto resume`).
#pragma once

#include <CLI/CLI.hpp>

namespace etcdadm::cli {

void add_auto_commands(CLI::App& app);

}  // namespace etcdadm::cli

// Wiring of the member lifecycle: init, join (each also as `<verb> phase <name>`), reset, info and
// download. Flags follow etcdadm's names and defaults, plus ports and a config dir for several
// members on one host.
#pragma once

#include <CLI/CLI.hpp>

namespace etcdadm::cli {

void add_lifecycle_commands(CLI::App& app);

}  // namespace etcdadm::cli

// Wiring of `etcdadm backup ...` subcommands: flags in, library call, result out.
#pragma once

#include <CLI/CLI.hpp>

namespace etcdadm::cli {

void add_backup_commands(CLI::App& app);

}  // namespace etcdadm::cli

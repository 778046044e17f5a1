// Wiring of `etcdadm backup inspect` and `etcdadm backup get`: what a backup (or a local snapshot
// file) holds, read natively without restoring it.
#pragma once

#include <CLI/CLI.hpp>

namespace etcdadm::cli {

void add_inspect_commands(CLI::App& backup);

}  // namespace etcdadm::cli

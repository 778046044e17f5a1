// Documents generated from the command tree itself, so they can never drift from the flags:
// `etcdadm completion bash` (a bash completion script) and `etcdadm man` (the etcdadm(1) manual
// page in roff, which the Debian package installs).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace etcdadm::cli {

// Registers `completion` and `man` on `app`; call it after every other command is registered.
// `environment` is the text of the ENVIRONMENT section (main's --help footer).
void add_docs_commands(CLI::App& app, const std::string& environment);

std::string bash_completion(const CLI::App& app);
std::string man_page(const CLI::App& app, const std::string& environment);

}  // namespace etcdadm::cli

// The command line as the operator typed it, to print "the same command, with this instead" in
// hints (e.g. the next intact backup after a damaged one), and who typed it.
#pragma once

#include <functional>
#include <string>

namespace etcdadm::cli {

void remember_invocation(int argc, char** argv);

// The remembered command with its first argument equal to `from` replaced by `to`, quoted for a
// POSIX shell where needed. Secrets are not echoed: values of --password are masked.
std::string invocation_with(const std::string& from, const std::string& to);

// invocation_with(query, name) as a function of the name: the hint after a damaged backup.
std::function<std::string(const std::string& name)> same_command_for(const std::string& query);

// user@host of the person running the command (records a person writes say who: a pause, an
// approval, a CA rotation).
std::string user_at_host();

}  // namespace etcdadm::cli

// Writing command lines for an operator to copy: one argument quoted for a POSIX shell, left bare
// when it holds nothing the shell would interpret.
#pragma once

#include <string>

namespace etcdadm {

std::string shell_quote(const std::string& arg);

}  // namespace etcdadm

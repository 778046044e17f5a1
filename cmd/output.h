// Choosing how results print: human tables by default, JSON (-o json) for scripts. Each result's
// two forms are render/'s; stdout carries only the result, logs and errors go to stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace etcdadm::cli {

enum class OutputFormat { kTable, kJson };
OutputFormat parse_output_format(const std::string& s);
// -o/--output-format, with etcdctl's -w/--write-out and ETCDCTL_WRITE_OUT as the same option.
void add_output_format_option(CLI::App* c, std::string& output);

}  // namespace etcdadm::cli

#include "cmd/output.h"

#include "common/error.h"

namespace etcdadm::cli {

OutputFormat parse_output_format(const std::string& s) {
  if (s == "table" || s == "simple" || s.empty()) return OutputFormat::kTable;
  if (s == "json") return OutputFormat::kJson;
  throw Error(ErrorKind::kInvalidArgument, "unknown output format '" + s + "'",
              "use -o (or -w) table or json; check ETCDCTL_WRITE_OUT, which sets it too");
}

void add_output_format_option(CLI::App* c, std::string& output) {
  c->add_option("-o,-w,--output-format,--write-out", output, "table|json (env ETCDCTL_WRITE_OUT, as etcdctl's -w)")
      ->envname("ETCDCTL_WRITE_OUT");
}

}  // namespace etcdadm::cli

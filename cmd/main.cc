// etcdadm entry point: global flags, subcommand registration, error-to-exit-status mapping.
#include <malloc.h>

#include <CLI/CLI.hpp>

#include <iostream>

#include "cmd/backup_commands.h"
#include "cmd/certs_commands.h"
#include "cmd/invocation.h"
#include "cmd/lifecycle_commands.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/log.h"

int main(int argc, char** argv) {
  // Part and chunk buffers (MiBs each) are often freed by another thread than the one that made
  // them. With glibc's adaptive mmap threshold they would then be recycled through per-thread
  // arenas and RSS creeps up; a fixed threshold keeps each large buffer in its own mapping, given
  // back to the kernel on free (measured in bench/README.md: S3 upload peak RSS 93 -> 77 MiB).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  etcdadm::cli::remember_invocation(argc, argv);
  CLI::App app{"etcdadm: etcd backups, restores and member lifecycle"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")->envname("ETCDADM_LOG_LEVEL");
  std::string log_format = "text";
  app.add_option("--log-format", log_format, "text|json (stderr)")
      ->envname("ETCDADM_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}));
  app.parse_complete_callback([&] { etcdadm::init_logging(log_level, log_format); });

  app.add_subcommand("version", "print the version")->callback([] { std::cout << "etcdadm " << ETCDADM_VERSION << "\n"; });
  app.set_version_flag("--version", std::string("etcdadm ") + ETCDADM_VERSION);
  etcdadm::cli::add_backup_commands(app);
  etcdadm::cli::add_certs_commands(app);
  etcdadm::cli::add_lifecycle_commands(app);

  // SIGINT/SIGTERM: work in progress stops and removes what it wrote (common/interrupt.h).
  etcdadm::install_interrupt_handlers();
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const etcdadm::Error& e) {
    std::cerr << "Error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "  hint: " << e.hint() << "\n";
    // Whatever failed once a stop was asked for failed because of it: 128 + the signal, as a shell
    // reports a command the signal ended.
    if (etcdadm::interrupt_signal() != 0) return 128 + etcdadm::interrupt_signal();
    return etcdadm::exit_code_for(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "Error: " << e.what() << "\n";
    if (etcdadm::interrupt_signal() != 0) return 128 + etcdadm::interrupt_signal();
    return 1;
  }
  if (etcdadm::interrupt_signal() != 0) {
    // The signal came when the work could no longer stop cleanly (it was finishing): it is done.
    std::cerr << "Interrupted after the work completed; its result above stands\n";
    return 128 + etcdadm::interrupt_signal();
  }
  return 0;
}

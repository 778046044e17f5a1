// etcdadm entry point: global flags, subcommand registration, error-to-exit-status mapping.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "cmd/auto_commands.h"
#include "cmd/backup_commands.h"
#include "cmd/certs_commands.h"
#include "cmd/cli_docs.h"
#include "cmd/etcd_manager_commands.h"
#include "cmd/invocation.h"
#include "cmd/lifecycle_commands.h"
#include "cmd/maintenance_commands.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/log.h"
#include "common/progress.h"
#include "etcd/grpc_runtime.h"

namespace {

// Every environment variable etcdadm reads, at the end of every --help (a test checks the list
// against the sources).
const char* const kEnvironmentHelp = R"(Environment:
  ETCDADM_STORE        default for --store
  ETCDADM_CATALOG_FULL_SYNC  how old the catalog's last full listing of a store may get (default 1h;
                       0: every time); in between, only backups newer than it knows are listed
  ETCDADM_CATALOG      the SQLite catalog (default: /var/cache/etcdadm/catalog.db for root,
                       else $XDG_CACHE_HOME or ~/.cache/etcdadm/catalog.db); one per host is shared by
                       every etcdadm run and member on it, which is safe
  ETCDADM_LOG_LEVEL, ETCDADM_LOG_FORMAT   defaults for --log-level, --log-format
  ETCDADM_PROGRESS, ETCDADM_PROGRESS_INTERVAL  defaults for --progress, --progress-interval
  ETCDADM_SYSTEMD_DIR  where init/join write systemd units (default /etc/systemd/system)
  ETCDADM_FAILPOINTS   tests only: places where etcdadm kills itself, or (NAME=pause) waits for a
                       signal (docs/testing.md); ETCDADM_FAILPOINT_DIR: where a pause says so
  Encrypted stores (docs/encryption.md; secrets are removed from the environment once read):
    ETCDADM_AGE_RECIPIENTS     recipients a new store is encrypted to (comma-separated age1...)
    ETCDADM_AGE_IDENTITY_FILE  identity file that opens backups (mode 0600)
    ETCDADM_AGE_IDENTITY       identity lines themselves (AGE-SECRET-KEY-1...)
    ETCDADM_AGE_PASSPHRASE     the passphrase of a passphrase store
  ETCDCTL_ENDPOINTS ETCDCTL_CACERT ETCDCTL_CERT ETCDCTL_KEY ETCDCTL_USER ETCDCTL_PASSWORD
  ETCDCTL_DIAL_TIMEOUT ETCDCTL_COMMAND_TIMEOUT ETCDCTL_INSECURE_SKIP_TLS_VERIFY ETCDCTL_WRITE_OUT
                       as etcdctl: defaults for the matching flags (flags win)
  S3 stores: AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_CONFIG_FILE
    AWS_SHARED_CREDENTIALS_FILE AWS_REGION AWS_DEFAULT_REGION AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3
    AWS_ENDPOINT_URL_STS AWS_CA_BUNDLE AWS_ROLE_ARN AWS_ROLE_SESSION_NAME AWS_WEB_IDENTITY_TOKEN_FILE
    AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI
    AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE AWS_EC2_METADATA_DISABLED
    AWS_EC2_METADATA_SERVICE_ENDPOINT, and S3_ENDPOINT S3_REGION S3_ACCESS_KEY_ID S3_SECRET_ACCESS_KEY
    (etcd-manager's names); order and meaning: docs/object-stores.md
  GCS stores: GOOGLE_APPLICATION_CREDENTIALS STORAGE_EMULATOR_HOST GCE_METADATA_HOST
  Retention (--policy etcd-manager): ETCD_MANAGER_HOURLY_BACKUPS_RETENTION ETCD_MANAGER_DAILY_BACKUPS_RETENTION
  TMPDIR               scratch copies of snapshots (verify, inspect, get, diff)
  TZ                   time zone of cron schedules without CRON_TZ
)";

void add_environment_footer(CLI::App* app) {
  app->footer(kEnvironmentHelp);
  for (CLI::App* sub : app->get_subcommands({})) add_environment_footer(sub);
}

}  // namespace

int main(int argc, char** argv) {
  // Part and chunk buffers (MiBs each) are often freed by another thread than the one that made
  // them. With glibc's adaptive mmap threshold they would then be recycled through per-thread
  // arenas and RSS creeps up; a fixed threshold keeps each large buffer in its own mapping, given
  // back to the kernel on free (measured in bench/docs/s3_upload_bench.md: S3 upload peak RSS 93 -> 77 MiB).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  // First, so that it is destroyed last: gRPC's threads are gone before exit's handlers run.
  const etcdadm::GrpcRuntime grpc_runtime;
  etcdadm::cli::remember_invocation(argc, argv);
  CLI::App app{"etcdadm: etcd backups, restores and member lifecycle"};
  app.require_subcommand(1);
  // Global options (--log-level, --progress, ...) work after the subcommand too, as in etcdctl.
  app.fallthrough();
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")->envname("ETCDADM_LOG_LEVEL");
  std::string log_format = "text";
  app.add_option("--log-format", log_format, "text|json (stderr)")
      ->envname("ETCDADM_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}));
  std::string progress = "auto";
  app.add_option("--progress", progress,
                 "auto|always|never: progress of long transfers on stderr; auto: a live line on a terminal, "
                 "nothing otherwise; with --log-format json a structured line every --progress-interval")
      ->envname("ETCDADM_PROGRESS")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  double progress_interval = 10;
  app.add_option("--progress-interval", progress_interval,
                 "seconds between progress lines in logs (--log-format json, or --progress always without a terminal)")
      ->envname("ETCDADM_PROGRESS_INTERVAL")
      ->check(CLI::Range(0.1, 86400.0));
  app.parse_complete_callback([&] {
    etcdadm::init_logging(log_level, log_format);
    etcdadm::set_progress_settings({etcdadm::parse_progress_mode(progress), log_format == "json",
                                    std::chrono::milliseconds(static_cast<int64_t>(progress_interval * 1000))});
  });

  app.add_subcommand("version", "print the version (also: etcdadm --version)")->callback([] {
    std::cout << "etcdadm " << ETCDADM_VERSION << "\n";
  });
  // `etcdadm --version` alone prints the version; no global --version flag. With one (CLI11's
  // version flag, and fallthrough for etcdctl's habit of global flags after the subcommand), a
  // mistyped subcommand's own --version was taken for it: `etcdadm upgrade aply --version 3.5.1`
  // printed the version and exited 0, and a script's upgrade step silently did nothing.
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    std::cout << "etcdadm " << ETCDADM_VERSION << "\n";
    return 0;
  }
  etcdadm::cli::add_backup_commands(app);
  etcdadm::cli::add_certs_commands(app);
  etcdadm::cli::add_etcd_manager_commands(app);
  etcdadm::cli::add_lifecycle_commands(app);
  etcdadm::cli::add_maintenance_commands(app);
  etcdadm::cli::add_auto_commands(app);
  etcdadm::cli::add_docs_commands(app, kEnvironmentHelp);
  add_environment_footer(&app);

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

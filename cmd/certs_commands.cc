#include "cmd/certs_commands.h"

#include <iostream>
#include <memory>
#include <optional>

#include "cmd/output.h"
#include "common/error.h"
#include "common/timefmt.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/member_config.h"
#include "etcdadm/pki.h"
#include "render/certs.h"

namespace etcdadm::cli {

namespace {

const char* kDefaultCertsDir = "/etc/etcd/pki";

void add_check_expiration(CLI::App& certs) {
  struct Flags {
    std::string dir = kDefaultCertsDir;
    std::string output = "table";
  };
  auto f = std::make_shared<Flags>();
  auto* c = certs.add_subcommand("check-expiration", "show when each certificate in the certs dir expires");
  c->add_option("--certs-dir", f->dir, "certificate directory")->capture_default_str();
  add_output_format_option(c, f->output);
  c->callback([f] {
    auto fmt = parse_output_format(f->output);
    auto certs = inspect_certs(f->dir);
    if (certs.empty()) throw Error(ErrorKind::kNotFound, "no certificates in " + f->dir, "check --certs-dir");
    auto now = std::chrono::system_clock::now();
    if (fmt == OutputFormat::kJson)
      std::cout << render::cert_expiration_json(certs, now).dump(2) << "\n";
    else
      std::cout << render::cert_expiration_text(certs, now);
  });
}

void add_renew(CLI::App& certs) {
  struct Flags {
    std::string dir = kDefaultCertsDir;
    std::vector<std::string> which;
    std::string validity = "365d";
    bool restart = false;
    std::string config_dir = "/etc/etcd";
  };
  auto f = std::make_shared<Flags>();
  auto* c = certs.add_subcommand("renew", "re-issue member certificates (same keys, subjects and SANs) from the CA");
  c->add_option("which", f->which, "all | server | peer | etcdctl-etcd-client | apiserver-etcd-client (default all)");
  auto* certs_dir = c->add_option("--certs-dir", f->dir, "certificate directory (with --restart: the member's)")
                        ->capture_default_str();
  c->add_option("--validity", f->validity, "validity of the renewed certificates")->capture_default_str();
  c->add_flag("--restart", f->restart,
              "restart this host's member (found through --config-dir) and wait until it is healthy");
  c->add_option("--config-dir", f->config_dir, "config dir of the member to restart")->capture_default_str();
  c->callback([f, certs_dir] {
    MemberConfig member;
    if (f->restart) {
      if (!load_member_state(f->config_dir, member)) {
        throw Error(ErrorKind::kNotFound, "no etcdadm member in " + f->config_dir + " to restart",
                    "pass the member's --config-dir, or restart etcd yourself");
      }
      if (certs_dir->count() == 0) f->dir = member.certs_dir;
    }
    auto d = parse_duration(f->validity);
    if (!d || d->count() <= 0)
      throw Error(ErrorKind::kInvalidArgument, "invalid --validity " + f->validity, "e.g. 365d");
    auto renewed = renew_certs(f->dir, f->which, std::chrono::duration_cast<std::chrono::hours>(*d));
    std::cout << render::certs_renewed_text(f->dir, renewed);
    if (f->restart) restart_member(member);
    std::cout << render::certs_restart_text(f->restart ? std::optional(member.name) : std::nullopt);
  });
}

}  // namespace

void add_certs_commands(CLI::App& app) {
  auto* certs = app.add_subcommand("certs", "check and renew the member certificates");
  certs->require_subcommand(1);
  add_check_expiration(*certs);
  add_renew(*certs);
}

}  // namespace etcdadm::cli

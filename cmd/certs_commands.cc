#include "cmd/certs_commands.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cmd/output.h"
#include "common/error.h"
#include "common/timefmt.h"
#include "etcdadm/lifecycle/local_member.h"
#include "render/json.h"
#include "etcdadm/member_config.h"
#include "etcdadm/pki.h"

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
    if (fmt == OutputFormat::kJson) {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& ci : certs) {
        arr.push_back(
            {{"name", ci.name},
             {"subject", ci.subject},
             {"serial", ci.serial_hex},
             {"notAfter", render::time_json(ci.not_after)},
             {"residualSeconds", std::chrono::duration_cast<std::chrono::seconds>(ci.not_after - now).count()},
             {"sans", ci.sans},
             {"ca", ci.is_ca},
             {"keyAlgorithm", ci.key_algorithm}});
      }
      std::cout << arr.dump(2) << "\n";
      return;
    }
    std::printf("%-24s  %-22s  %-10s  %-10s  %s\n", "CERTIFICATE", "EXPIRES", "RESIDUAL", "KEY", "SUBJECT");
    for (const auto& ci : certs) {
      auto left = std::chrono::duration_cast<std::chrono::seconds>(ci.not_after - now);
      std::string residual = left.count() <= 0 ? "EXPIRED" : format_duration_short(left);
      std::printf("%-24s  %-22s  %-10s  %-10s  %s\n", ci.name.c_str(), format_rfc3339_seconds(ci.not_after).c_str(),
                  residual.c_str(), ci.key_algorithm.c_str(), ci.subject.c_str());
    }
    std::cout.flush();
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
    for (const auto& r : renewed) std::cout << "renewed " << f->dir << "/" << r << ".crt\n";
    if (f->restart) {
      restart_member(member);
      std::cout << "restarted member " << member.name << ": it serves the renewed certificates and is healthy\n"
                << "renew and restart the other members one at a time, so the cluster keeps quorum.\n";
      return;
    }
    std::cout << "etcd reads its certificates at start: restart the members one at a time (wait for each to be "
                 "healthy, or use --restart) so the cluster keeps quorum.\n";
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

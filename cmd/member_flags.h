// The flags that place and install a member on this host, shared by init, join and auto: where
// etcd comes from (ReleaseFlags), where the member lives (LocationFlags), and everything init and
// join take (MemberFlags).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cmd/invocation.h"
#include "cmd/output.h"
#include "cmd/store_flags.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/text.h"
#include "etcd/connection.h"
#include "etcdadm/lifecycle/init_join.h"
#include "etcdadm/member_config.h"
#include "etcdadm/pki.h"
#include "etcdadm/release/fetch.h"
#include "etcdadm/release/install.h"

namespace etcdadm::cli {

// Where etcd comes from (download, init, join).
struct ReleaseFlags {
  ReleaseSpec spec;
  std::string version;
  void add_to(CLI::App* c) {
    spec.cache_dir = user_cache_dir();
    auto* g = c->add_option_group("Installing etcd");
    g->add_option("--version", version,
                  std::string("etcd version to install (default ") + kDefaultEtcdVersion +
                      "; with --binaries-dir: the version found there)");
    g->add_option("--release-url", spec.release_url,
                  "where releases live: https://, http:// or file:// (<url>/v<ver>/...)")
        ->capture_default_str();
    g->add_option("--release-tarball", spec.tarball,
                  "install from this local etcd-v<ver>-linux-<arch>.tar.gz (air-gapped)");
    g->add_option("--binaries-dir", spec.binaries_dir,
                  "install the etcd/etcdctl[/etcdutl] binaries found in this directory");
    g->add_option("--release-sha256", spec.sha256,
                  "expected SHA-256 of the tarball (default: from the release's SHA256SUMS)");
    g->add_flag("--skip-release-checksum", spec.skip_checksum, "install a tarball without any SHA-256 check");
    g->add_option("--cache-dir", spec.cache_dir, "downloaded tarballs are kept here")->capture_default_str();
  }
  ReleaseSpec resolved() const {
    ReleaseSpec s = spec;
    s.version = !version.empty() ? version : (s.binaries_dir.empty() ? kDefaultEtcdVersion : "");
    if (!s.version.empty()) s.version = normalise_version(s.version);
    return s;
  }
};

// The dirs and ports that locate a member on this host (every lifecycle command).
struct LocationFlags {
  MemberConfig member;
  std::string init_system = "systemd";
  std::vector<CLI::Option*> options;  // to tell given flags from defaults
  void add_to(CLI::App* c) {
    auto* g = c->add_option_group("Member location");
    options = {
        g->add_option("--name", member.name, "member name (default: the host name)"),
        g->add_option("--install-dir", member.install_dir, "where etcd, etcdctl and etcdutl go")->capture_default_str(),
        g->add_option("--certs-dir", member.certs_dir, "PKI directory")->capture_default_str(),
        g->add_option("--data-dir", member.data_dir, "etcd data dir")->capture_default_str(),
        g->add_option("--config-dir", member.config_dir, "env files and etcdadm's state file")->capture_default_str(),
        g->add_option("--bind-address", member.bind_address,
                      "IP etcd listens and advertises on (default: the primary IPv4)"),
        g->add_option("--client-port", member.client_port, "client port")->capture_default_str(),
        g->add_option("--peer-port", member.peer_port, "peer port")->capture_default_str(),
        g->add_option("--init-system", init_system, "systemd | kubelet | process")
            ->capture_default_str()
            ->check(CLI::IsMember({"systemd", "kubelet", "process"})),
        g->add_option("--service-name", member.service_name, "systemd unit / static pod / process name")
            ->capture_default_str(),
    };
  }
  // What a command that needs a member says when --config-dir holds none.
  Error no_member_state(const std::string& what, const std::string& hint) const {
    return Error(ErrorKind::kNotFound, "no etcdadm member state in " + member.config_dir + " (no etcdadm.json)" + what,
                 hint);
  }
  // Whether there is a member to act on: its state file in --config-dir, or --name and --data-dir
  // given (what is left of a member whose state file is gone, e.g. a reset run again).
  bool names_a_member() const {
    MemberConfig state;
    return load_member_state(member.config_dir, state) || (options[0]->count() > 0 && options[3]->count() > 0);
  }
  // The member recorded in --config-dir, for commands that need what init or join recorded (its
  // certificates, ports and init system). Without a state file the defaults describe nobody's
  // member: refused, rather than warning about a member that does not answer and failing on a
  // certificate file that was never written.
  MemberConfig recorded(const std::string& command) const {
    MemberConfig state;
    if (!load_member_state(member.config_dir, state)) {
      throw no_member_state(
          ": `etcdadm " + command + "` works on a member that etcdadm init or join set up",
          "point --config-dir at that member's config dir (e.g. --config-dir /etc/etcd-b for a second "
          "member on this host); for an etcd etcdadm did not set up, ask it with etcdctl --endpoints");
    }
    return located();
  }
  // The member as the command line describes it.
  MemberConfig from_flags() const {
    MemberConfig m = member;
    m.init_system = parse_init_system(init_system);
    return m;
  }
  // The member this host has in --config-dir (its state file), with explicitly given flags winning.
  MemberConfig located() const {
    MemberConfig m;
    if (!load_member_state(member.config_dir, m)) {
      m = from_flags();
      m.complete();
      return m;
    }
    MemberConfig given = from_flags();
    auto set = [&](size_t i) { return options[i]->count() > 0; };
    if (set(0)) m.name = given.name;
    if (set(1)) m.install_dir = given.install_dir;
    if (set(2)) m.certs_dir = given.certs_dir;
    if (set(3)) m.data_dir = given.data_dir;
    if (set(5)) m.bind_address = given.bind_address;
    if (set(6)) m.client_port = given.client_port;
    if (set(7)) m.peer_port = given.peer_port;
    if (set(8)) m.init_system = given.init_system;
    if (set(9)) m.service_name = given.service_name;
    return m;
  }
};

// Everything init and join (and their phases) take.
struct MemberFlags {
  LocationFlags location;
  ReleaseFlags release;
  std::string extra_sans;
  std::string key_algorithm;
  bool no_disk_priorities = false;
  std::string cipher_suites;
  std::string start_timeout = "2m";
  std::string promote_timeout = "5m";
  std::string output = "table";

  void add_to(CLI::App* c) {
    location.add_to(c);
    release.add_to(c);
    auto* g = c->add_option_group("Member settings");
    g->add_option("--server-cert-extra-sans", extra_sans, "more SANs for the server certificate (comma-separated)");
    g->add_option("--key-algorithm", key_algorithm,
                  "key of new certificates: rsa-2048 or ecdsa-p256 (default: the CA's; a new CA's: rsa-2048)");
    g->add_option("--kubelet-pod-manifest-path", location.member.kubelet_manifest_dir,
                  "static pod manifests dir (--init-system kubelet)")
        ->capture_default_str();
    g->add_option("--image-repository", location.member.image_repository,
                  "etcd image repository (--init-system kubelet)")
        ->capture_default_str();
    g->add_flag(
        "--no-disk-priorities", no_disk_priorities,
        "do not raise etcd's CPU and I/O priority (systemd: Nice=-10, IOSchedulingClass=best-effort, priority 2)");
    g->add_option("--quota-backend-bytes", location.member.quota_backend_bytes,
                  "etcd's db size limit, above which it raises the NOSPACE alarm (0: etcd's default, 2 GiB; etcd "
                  "recommends at most 8 GiB)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    g->add_option("--cipher-suites", cipher_suites,
                  "etcd's --cipher-suites: the TLS 1.2 cipher suites of its client and peer listeners, Go's names, "
                  "comma-separated (default: Go's; TLS 1.3 is always on)");
    g->add_option("--start-timeout", start_timeout, "how long to wait for the started member to answer")
        ->capture_default_str();
    add_output_format_option(c, output);
  }

  LifecycleOptions options() const {
    LifecycleOptions o;
    o.member = location.from_flags();
    o.release = release.resolved();
    o.member.version = o.release.version;
    o.member.disk_priorities = !no_disk_priorities;
    for (const auto& s : split_endpoints(extra_sans)) o.member.server_cert_extra_sans.push_back(s);
    if (!key_algorithm.empty()) o.key_algorithm = parse_key_algorithm(key_algorithm);
    o.member.cipher_suites = parse_cipher_suites(cipher_suites);
    o.member.complete();
    o.start_timeout = duration_flag("--start-timeout", start_timeout, false);
    o.promote_timeout = duration_flag("--promote-timeout", promote_timeout, false);
    return o;
  }
};

}  // namespace etcdadm::cli

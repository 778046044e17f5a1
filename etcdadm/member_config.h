// One etcd member as etcdadm manages it: the settings the user gives (etcdadm's flags and defaults,
// plus ports and a config dir so several members fit on one host), the paths and URLs derived from
// them, the environment file etcd reads (ETCD_* variables, etcdadm's file and names), and the state
// file that lets reset/info/join find the member again without repeating every flag.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace etcdadm {

enum class InitSystemKind { kSystemd, kKubelet, kProcess };

// "systemd" | "kubelet" | "process"; throws kInvalidArgument otherwise.
InitSystemKind parse_init_system(const std::string& name);
const char* init_system_name(InitSystemKind kind);

// Ordered NAME=value pairs (the order is kept when rendering files).
using EnvVars = std::vector<std::pair<std::string, std::string>>;

// Host part of a URL as etcd wants it: IPv6 literals in brackets.
std::string url_host(const std::string& address);

// The loopback addresses a member may listen on beside its bind address: kIpv4Loopback (the
// default) and kIpv6Loopback.
inline constexpr const char* kIpv4Loopback = "127.0.0.1";
inline constexpr const char* kIpv6Loopback = "::1";
bool is_member_loopback_address(const std::string& address);

struct MemberConfig {
  std::string name;     // default: the host name
  std::string version;  // etcd version, "3.5.17"
  std::string install_dir = "/opt/bin";
  std::string certs_dir = "/etc/etcd/pki";
  std::string data_dir = "/var/lib/etcd";
  std::string config_dir = "/etc/etcd";
  std::string bind_address;  // the IP etcd listens and advertises on; default: the primary IPv4
  // The loopback address etcd also listens on for clients, and that etcdadm, etcdctl and the
  // sidecar reach the local member through: 127.0.0.1, or ::1 for a kubeadm member taken over
  // from an IPv6 control plane (kubeadm listens on [::1] there, and its server certificates name
  // both loopbacks).
  std::string loopback_address = kIpv4Loopback;
  int client_port = 2379;
  int peer_port = 2380;
  std::vector<std::string> server_cert_extra_sans;
  InitSystemKind init_system = InitSystemKind::kSystemd;
  std::string service_name = "etcd";  // systemd unit / static pod / process name
  std::string kubelet_manifest_dir = "/etc/kubernetes/manifests";
  std::string image_repository = "quay.io/coreos/etcd";  // kubelet: image <repo>:<tag>
  // The image's tag, "{version}" standing for the member's version: etcdadm's images are tagged
  // v3.7.0; registry.k8s.io's (a kubeadm member taken over) 3.7.0-0.
  std::string image_tag_format = "v{version}";
  // The static pod's name (kubelet): empty is etcdadm's <service-name>-<name>; a kubeadm member
  // taken over keeps kubeadm's ("etcd", whose mirror pod is etcd-<node>, as kubectl users and
  // kubeadm know it).
  std::string pod_name;
  bool disk_priorities = true;  // systemd: Nice=-10, best-effort I/O class, priority 2 (etcdadm's)
  // etcd's --quota-backend-bytes (ETCD_QUOTA_BACKEND_BYTES); 0: etcd's default (2 GiB). What the
  // NOSPACE alarm compares a member's db file with.
  int64_t quota_backend_bytes = 0;
  // etcd's --cipher-suites (ETCD_CIPHER_SUITES), for its client and peer listeners: Go's names of
  // the TLS 1.2 suites it may negotiate (TLS 1.3 has its own, which Go does not let one choose);
  // empty: Go's defaults. What Cluster API's etcdadm bootstrap provider passes.
  std::vector<std::string> cipher_suites;
  // Client URLs of the cluster's members as known at init/join time: how reset reaches the
  // cluster when this member is down.
  std::vector<std::string> cluster_endpoints;
  // ETCD_* variables etcdadm does not set itself, passed to etcd as they are: the flags of a
  // kubeadm member taken over that etcdadm has no setting for (--snapshot-count,
  // --watch-progress-notify-interval, --listen-metrics-urls), kept across its rewrites.
  EnvVars extra_env;

  // ---- derived ----
  std::string client_url() const;           // https://<bind>:<client-port>
  std::string peer_url() const;             // https://<bind>:<peer-port>
  std::string loopback_client_url() const;  // https://<loopback>:<client-port>, [::1] bracketed
  // The client URLs etcd listens on: the advertised one plus loopback (unless the bind address is
  // that loopback, or every address).
  std::vector<std::string> listen_client_urls() const;
  std::string etcd_binary() const { return install_dir + "/etcd"; }
  std::string etcdctl_binary() const { return install_dir + "/etcdctl"; }
  std::string env_file() const { return config_dir + "/etcd.env"; }
  std::string etcdctl_env_file() const { return config_dir + "/etcdctl.env"; }
  // etcdadm's <install-dir>/etcdctl.sh for the default config dir; <config-dir>/etcdctl.sh for
  // another one (several members on one host share the install dir).
  std::string etcdctl_wrapper() const;
  std::string state_file() const { return config_dir + "/etcdadm.json"; }
  std::string pid_file() const { return config_dir + "/" + service_name + ".pid"; }  // process init system
  std::string log_file() const { return config_dir + "/" + service_name + ".log"; }  // process init system
  std::string ca_cert() const { return certs_dir + "/ca.crt"; }
  std::string ca_key() const { return certs_dir + "/ca.key"; }
  // The client CAs a member trusts after a CA rotation's switch: the new CA then the retired one
  // (controller/ca_rotation.h, trust_retired_ca_for_clients).
  std::string clients_ca_cert() const { return certs_dir + "/clients-ca.crt"; }
  std::string image() const;  // image_repository:<image_tag_format with the version>
  std::string cert(const std::string& stem) const { return certs_dir + "/" + stem + ".crt"; }
  std::string key(const std::string& stem) const { return certs_dir + "/" + stem + ".key"; }

  // Fills the defaults that depend on the machine (name = host name, bind address = primary IPv4)
  // and checks the rest (ports, absolute dirs, a DNS-safe name). Throws kInvalidArgument.
  void complete();
};

// 1-63 letters, digits, '-', '_' or '.': a name that can go into certificate names, URLs and store keys.
bool is_usable_member_name(const std::string& name);

// The TLS cipher suite names etcd accepts for --cipher-suites (Go's crypto/tls names, the secure and
// the insecure ones, and the two short ChaCha20 names etcd also maps), in Go's order.
const std::vector<std::string>& etcd_cipher_suite_names();
// A comma-separated --cipher-suites list, each name checked against etcd_cipher_suite_names()
// (kInvalidArgument naming the first unknown one; a name etcd rejects would stop etcd at start).
std::vector<std::string> parse_cipher_suites(const std::string& list);
// Whether one of `suites` can be negotiated over TLS 1.2 with a server key of `key_algorithm` (as
// key_algorithm_of_cert names it: "rsa-2048", "ecdsa-p256", "ec-secp384r1"): an ECDHE_ECDSA suite
// needs an EC key, the others an RSA key; TLS 1.3 names do not count (Go negotiates TLS 1.3
// whatever the list says).
bool cipher_suites_fit_key(const std::vector<std::string>& suites, const std::string& key_algorithm);

// How the member joins: a new cluster or an existing one.
struct ClusterBootstrap {
  std::string initial_cluster;  // name1=https://...,name2=https://...
  std::string token;            // --initial-cluster-token
  bool existing = false;        // ETCD_INITIAL_CLUSTER_STATE=existing
};

// The ETCD_* variables of the member (etcdadm's env file, TLS on client and peer URLs with
// client-cert auth, strict reconfig check), in a stable order. Clients are trusted by
// clients_ca_cert() when that bundle begins with the current CA (a host whose CA rotation kept the
// retired CA for clients keeps it across a new init or join), by ca_cert() otherwise.
EnvVars member_env(const MemberConfig& config, const ClusterBootstrap& bootstrap);

// etcd's own corruption checks, as etcd `version` names them: the initial check (a member
// compares its HashKV with its peers' before it serves, and stops on a difference) from 3.5 (3.4's
// cannot reach its peers under TLS client auth and always passes: none on 3.4), and the check after
// every compaction (the leader compares the followers' hashes at the compacted revision and raises
// CORRUPT) from 3.5.5. 3.5 reads them as ETCD_EXPERIMENTAL_*; 3.6 and later as ETCD_FEATURE_GATES. Measured
// on 3.4.23, 3.5.35, 3.6.16 and 3.7.3: every release only warns about the other releases' variables and ignores them,
// except that 3.6 refuses to start with both (so an env file must never hold both), and 3.7 ignores the 3.5 ones: a
// version change rewrites them (with_corruption_checks). An unparseable version gets none.
EnvVars corruption_check_env(const std::string& version);

// `env` with the corruption check variables of `version` in place of whichever it held.
EnvVars with_corruption_checks(EnvVars env, const std::string& version);

// `env` without etcd's initial corruption check, for the first start of members restored from one
// snapshot: their data is that snapshot's by construction (etcdadm compares their HashKV once they
// serve), and on 3.6 and 3.7 the check of members started at once waits out its 7 s timeout for
// each peer that listens but does not answer yet (measured: a cluster restarted whole served after
// 7.3-14.6 s instead of 0.4-0.6 s).
EnvVars without_initial_corruption_check(EnvVars env);

// The variables etcdctl needs to talk to this member with the etcdctl client certificate
// (ETCDCTL_ENDPOINTS, ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY, and ETCDCTL_API=3 first for 3.4
// and older: etcd_version.h).
EnvVars etcdctl_env(const MemberConfig& config);

// NAME=value lines (values are written as they are: etcd's env files hold no quoting), and back.
// Rendering refuses (kInvalidArgument) a name that is not [A-Za-z_][A-Za-z0-9_]* and a value
// holding a line break or NUL, which would smuggle in lines of its own.
// Parsing ignores blank lines and # comments and accepts optional "export " and double quotes.
std::string render_env_file(const EnvVars& vars);
EnvVars parse_env_file(const std::string& text);
// The env file's variable for etcd's --quota-backend-bytes.
inline constexpr const char* kQuotaBackendBytesVar = "ETCD_QUOTA_BACKEND_BYTES";
// `vars` with `name` set to `value` (nullopt: removed), the rest kept in their order.
EnvVars with_env_value(EnvVars vars, const std::string& name, const std::optional<std::string>& value);
// Sets `name` in the member's env file to `value` (nullopt: removes it), the rest kept; read by
// etcd at its next start.
void set_member_env(const MemberConfig& config, const std::string& name, const std::optional<std::string>& value);
// The value of `name` in `vars`, or "" when absent.
std::string env_value(const EnvVars& vars, const std::string& name);

// The state file (JSON): every MemberConfig field, so later commands can act on the member with
// only --config-dir. Written 0600 atomically.
void save_member_state(const MemberConfig& config);
// Reads <config_dir>/etcdadm.json; returns false when it does not exist.
bool load_member_state(const std::string& config_dir, MemberConfig& config);

}  // namespace etcdadm

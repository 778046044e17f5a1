#include "etcdadm/lifecycle/init_join.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#include "common/error.h"
#include "common/failpoint.h"
#include "common/file_users.h"
#include "common/fs.h"
#include "common/retry.h"
#include "common/shell.h"
#include "common/subprocess.h"
#include "common/text.h"
#include "etcd/client.h"
#include "etcd/etcd_version.h"
#include "etcd/tls_probe.h"
#include "etcdadm/init_system.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/maintenance/space.h"
#include "etcdadm/member_health.h"
#include "etcdadm/member_remove.h"
#include "etcdadm/pki.h"
#include "etcdadm/quorum.h"
#include "etcdadm/release/install.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string join_csv(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// "name1=url1,name2=url2" for ETCD_INITIAL_CLUSTER: every member of the cluster, this one included.
std::string initial_cluster_from(const google::protobuf::RepeatedPtrField<etcdserverpb::Member>& members,
                                 const MemberConfig& self) {
  std::vector<std::string> parts;
  for (const auto& m : members) {
    bool is_self = false;
    for (const auto& u : m.peerurls()) is_self = is_self || u == self.peer_url();
    if (is_self) {
      parts.push_back(self.name + "=" + self.peer_url());
      continue;
    }
    // etcd checks that the initial cluster has as many members as the cluster itself, so a
    // member that has not started yet (no name) is listed under a placeholder of its own.
    std::string name = m.name().empty() ? fmt::format("unstarted-{:x}", m.id()) : m.name();
    for (const auto& u : m.peerurls()) parts.push_back(name + "=" + u);
  }
  return join_csv(parts);
}

std::vector<std::string> client_urls_of(const google::protobuf::RepeatedPtrField<etcdserverpb::Member>& members) {
  std::vector<std::string> urls;
  for (const auto& m : members) {
    for (const auto& u : m.clienturls()) urls.push_back(u);
  }
  return urls;
}

// One init or join run: the phases share what earlier ones found out (the bootstrap, the member ID).
}  // namespace

std::string join_command_for(const LifecycleOptions& o, const MemberConfig& m) {
  const MemberConfig defaults;
  const ReleaseSpec release_defaults;
  std::vector<std::string> args = {"etcdadm", "join", m.client_url(), "--version", m.version};
  auto flag = [&](const char* name, const std::string& value) {
    args.push_back(name);
    args.push_back(value);
  };
  // Where etcd comes from: the joining host must install the very same release, also offline.
  const ReleaseSpec& r = o.release;
  if (!r.binaries_dir.empty()) {
    flag("--binaries-dir", r.binaries_dir);
  } else if (!r.tarball.empty()) {
    flag("--release-tarball", absolute_path(r.tarball));
  } else if (r.release_url != release_defaults.release_url) {
    flag("--release-url", r.release_url);
  }
  if (!r.sha256.empty()) flag("--release-sha256", r.sha256);
  if (r.skip_checksum) args.push_back("--skip-release-checksum");
  if (r.cache_dir != release_defaults.cache_dir) flag("--cache-dir", r.cache_dir);
  // The layout this member uses, so the next one matches it (its name and address are its own).
  if (m.install_dir != defaults.install_dir) flag("--install-dir", m.install_dir);
  if (m.certs_dir != defaults.certs_dir) flag("--certs-dir", m.certs_dir);
  if (m.data_dir != defaults.data_dir) flag("--data-dir", m.data_dir);
  if (m.config_dir != defaults.config_dir) flag("--config-dir", m.config_dir);
  if (m.client_port != defaults.client_port) flag("--client-port", std::to_string(m.client_port));
  if (m.peer_port != defaults.peer_port) flag("--peer-port", std::to_string(m.peer_port));
  if (m.init_system != defaults.init_system) flag("--init-system", init_system_name(m.init_system));
  if (m.service_name != defaults.service_name) flag("--service-name", m.service_name);
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

namespace {

class Runner {
 public:
  Runner(const LifecycleOptions& options, bool join)
      : o_(options), m_(o_.member), join_(join), init_system_(make_init_system(m_.init_system)) {}

  // One phase: its name and description as `etcdadm init|join phase` lists them, and its work.
  struct Step {
    Phase phase;
    void (*work)(Runner& runner, bool alone);  // `alone`: run by itself (`phase <name>`)
  };
  // The phases of init and of join, in order: each list names its own work, so a phase cannot be
  // listed without it, and init's and join's preflights are different steps.
  static const std::vector<Step>& init_steps() {
    static const std::vector<Step> steps = {
        {{"preflight", "check that this host has no member yet and the settings are usable"},
         [](Runner& r, bool alone) { r.preflight_init(alone); }},
        {{"install", "download, verify and install etcd, etcdctl and etcdutl"}, [](Runner& r, bool) { r.install(); }},
        {{"certificates", "create the CA (or reuse the one in --certs-dir) and the member certificates"},
         [](Runner& r, bool) { r.certificates(); }},
        {{"snapshot", "restore --snapshot / --from-backup into the data dir"}, [](Runner& r, bool) { r.snapshot(); }},
        {{"configure", "write the env file, the state file and the service definition"},
         [](Runner& r, bool) { r.configure(); }},
        {{"start", "start etcd through the init system"}, [](Runner& r, bool) { r.start(); }},
        {{"etcdctl", "write etcdctl.env and the etcdctl.sh wrapper"}, [](Runner& r, bool) { r.etcdctl(); }},
        {{"health", "wait until the member serves a linearizable read"}, [](Runner& r, bool) { r.health(); }},
    };
    return steps;
  }
  static const std::vector<Step>& join_steps() {
    static const std::vector<Step> steps = {
        {{"preflight", "check the CA, the data dir and that the endpoint's certificate comes from our CA"},
         [](Runner& r, bool alone) { r.preflight_join(alone); }},
        {{"install", "download, verify and install etcd, etcdctl and etcdutl"}, [](Runner& r, bool) { r.install(); }},
        {{"certificates", "create the member certificates from the cluster's CA"},
         [](Runner& r, bool) { r.certificates(); }},
        {{"membership", "add this member to the cluster as a learner"}, [](Runner& r, bool) { r.membership(); }},
        {{"configure", "write the env file, the state file and the service definition"},
         [](Runner& r, bool) { r.configure(); }},
        {{"start", "start etcd through the init system"}, [](Runner& r, bool) { r.start(); }},
        {{"etcdctl", "write etcdctl.env and the etcdctl.sh wrapper"}, [](Runner& r, bool) { r.etcdctl(); }},
        {{"promote",
          "wait until the learner has caught up, start it again on the quota (defragmented if its file would not "
          "fit), promote it, check its health"},
         [](Runner& r, bool) { r.promote(); }},
    };
    return steps;
  }
  static std::vector<Phase> phases_of(const std::vector<Step>& steps) {
    std::vector<Phase> out;
    for (const auto& s : steps) out.push_back(s.phase);
    return out;
  }

  LifecycleResult run(const std::vector<Step>& steps, const std::string& only) {
    if (!only.empty()) check_phase_name(phases_of(steps), only);
    for (const auto& s : steps) {
      if (!only.empty() && s.phase.name != only) continue;
      spdlog::info("[{}] {}", s.phase.name, s.phase.description);
      s.work(*this, /*alone=*/!only.empty());
      result_.phases_run.push_back(s.phase.name);
    }
    result_.client_url = m_.client_url();
    if (!join_) result_.join_command = join_command_for(o_, m_);
    return result_;
  }

 private:
  // A non-empty data dir is only acceptable when it is this member's own, left by an earlier run
  // of the same command that stopped part way (the state file names it).
  bool resuming() const {
    MemberConfig saved;
    return load_member_state(m_.config_dir, saved) && saved.name == m_.name && saved.data_dir == m_.data_dir;
  }

  // Written once the snapshot phase has restored the data dir, removed once the member is healthy:
  // a re-run in between continues with that data (and its token) instead of refusing it.
  std::string restore_marker() const { return m_.config_dir + "/restore-pending"; }
  bool restored_earlier() const { return path_exists(restore_marker()) && resuming(); }

  void check_data_dir() {
    if (is_empty_data_dir(m_.data_dir)) return;
    if (o_.restore_snapshot && restored_earlier()) {
      spdlog::info("data dir {} was restored by an earlier run of this init: continuing it", m_.data_dir);
      return;
    }
    if (o_.restore_snapshot) {
      throw Error(ErrorKind::kAlreadyExists, "data dir " + m_.data_dir + " is not empty: refusing to restore over it",
                  "run `etcdadm reset` first (it removes this member's data), or choose another --data-dir");
    }
    if (!resuming()) {
      throw Error(ErrorKind::kAlreadyExists,
                  "data dir " + m_.data_dir + " is not empty and belongs to no etcdadm member here",
                  "run `etcdadm reset` (with the same --config-dir/--data-dir) first, or choose another --data-dir");
    }
    spdlog::info("data dir {} belongs to member {} from an earlier run: continuing it", m_.data_dir, m_.name);
  }

  // The ports etcd will listen on are free (or held by this member's own etcd, started by an
  // earlier run of this command), and the bind address is this host's: checked before anything is
  // written, since etcd would otherwise fail only in the start phase, after certificates, state
  // file and service were written, and a reset would then talk to whatever holds the port.
  void check_ports() {
    struct Listen {
      std::string address;
      int port;
      const char* flag;
    };
    std::vector<Listen> listens = {{m_.bind_address, m_.client_port, "--client-port"},
                                   {m_.bind_address, m_.peer_port, "--peer-port"}};
    if (m_.listen_client_urls().size() > 1) listens.push_back({m_.loopback_address, m_.client_port, "--client-port"});
    std::error_code ec;
    const std::string own = std::filesystem::weakly_canonical(m_.etcd_binary(), ec).string();
    for (const auto& [address, port, flag] : listens) {
      const std::string where = url_host(address) + ":" + std::to_string(port);
      ListenCheck c = check_listen(address, port);
      if (c.address_missing) {
        throw Error(ErrorKind::kInvalidArgument,
                    "etcd cannot listen on " + where + ": " + address + " is not an address of this host",
                    "pass --bind-address with one of this host's addresses (ip -brief address)");
      }
      if (!c.in_use) continue;
      if (c.holder && (c.holder->exe == own || c.holder->exe == m_.etcd_binary()) && resuming()) {
        spdlog::info("{} is served by this member's etcd (PID {}), started by an earlier run", where, c.holder->pid);
        continue;
      }
      std::string who = c.holder ? "PID " + std::to_string(c.holder->pid) + ": " + c.holder->command
                                 : "a process this user cannot see (run as root to see which)";
      throw Error(ErrorKind::kInUse, where + " (" + flag + ") is in use by " + who + "; nothing was written",
                  std::string("stop that process, or choose another ") + flag);
    }
  }

  // The release to install exists (or the cache holds it), before anything is written.
  void check_release() {
    if (o_.skip_install) return;
    ReleaseSpec spec = o_.release;
    spec.version = m_.version;
    check_release_available(spec, m_.install_dir);
  }

  void preflight_init(bool alone) {
    init_system_->check_usable();
    check_data_dir();
    check_ports();
    check_release();
    if (path_exists(m_.ca_cert()) != path_exists(m_.ca_key())) {
      throw Error(ErrorKind::kNotFound, "the CA in " + m_.certs_dir + " is incomplete (ca.crt and ca.key go together)",
                  "restore the missing file, or remove both to create a new CA");
    }
    if (!o_.initial_cluster.empty()) {
      // Every host restores the same cluster at once: they must share the token (the member and
      // cluster IDs derive from it) and the CA (each member checks its peers' certificates).
      if (!o_.restore_snapshot && !o_.static_bootstrap) {
        throw Error(ErrorKind::kInvalidArgument, "--initial-cluster goes with --from-backup or --snapshot",
                    "a new empty cluster starts with one member; the others join it");
      }
      if (o_.initial_cluster_token.empty()) {
        throw Error(ErrorKind::kInvalidArgument, "--initial-cluster needs --initial-cluster-token",
                    "give every host the same token, e.g. etcd-restored-$(date +%Y%m%d)");
      }
      if (!path_exists(m_.ca_cert())) {
        throw Error(ErrorKind::kNotFound, "no CA in " + m_.certs_dir + ": the members of one cluster must share one",
                    "copy ca.crt and ca.key (mode 0600) from one host's certs dir to every other host first, or create "
                    "them on one host with `etcdadm init phase certificates` and copy them");
      }
    }
  }

  void preflight_join(bool alone) {
    if (o_.join_endpoint.empty()) throw Error(ErrorKind::kInvalidArgument, "no endpoint to join given");
    if (!path_exists(m_.ca_cert()) || !path_exists(m_.ca_key())) {
      throw Error(ErrorKind::kNotFound, "no CA in " + m_.certs_dir + " (ca.crt and ca.key are needed to join)",
                  "copy ca.crt and ca.key from the certs dir of a member of the cluster (" + o_.join_endpoint +
                      ") into " + m_.certs_dir + ", mode 0600 for the key");
    }
    init_system_->check_usable();
    check_data_dir();
    check_ports();
    check_release();
    // Talks to the endpoint before anything is written, so that a wrong CA or a wrong address
    // fails here with nothing left behind.
    RetryPolicy policy;
    policy.max_attempts = o_.retry ? 5 : 1;
    policy.base_delay = 500ms;
    with_retries(policy, "TLS check of " + o_.join_endpoint, [&] {
      auto r = probe_tls_endpoint(o_.join_endpoint, m_.ca_cert(), "", "", 5s);
      spdlog::info("{} presents {} issued by our CA ({})", o_.join_endpoint, r.server_subject, r.server_issuer);
    });
    // Checked before anything is installed or written (the membership phase checks again and
    // removes the member).
    if (!o_.replace.empty()) replacement(/*remove=*/false);
  }

  // This member's certificates, or (before the certificates phase has issued them) a throw-away
  // set from the same CA in a scratch dir, so that preflight asks the cluster without writing.
  MemberConfig with_client_certificate(std::unique_ptr<ScratchDir>& scratch) const {
    if (path_exists(m_.cert("etcdctl-etcd-client"))) return m_;
    scratch = std::make_unique<ScratchDir>("etcdadm-join");
    MemberConfig t = m_;
    t.certs_dir = scratch->path();
    for (const char* f : {"/ca.crt", "/ca.key"}) write_file_atomic(t.certs_dir + f, read_file(m_.certs_dir + f), 0600);
    ensure_member_certs(member_pki_spec(t));
    return t;
  }

  // <config-dir>/replacing: "<hex ID> <name>" of the member being replaced, written before its
  // removal, so that a re-run knows the member it no longer finds was removed by this join.
  std::string replacing_marker() const { return m_.config_dir + "/replacing"; }

  // join --replace: checks (and with `remove`, removes) the failed member this one replaces.
  void replacement(bool remove) {
    std::unique_ptr<ScratchDir> scratch;
    const MemberConfig client_side = with_client_certificate(scratch);
    ClusterInfo info = cluster_info(connection_to(client_side, {o_.join_endpoint}), 0);
    if (path_exists(replacing_marker())) {
      std::string text = read_file(replacing_marker());
      text.erase(text.find_last_not_of("\n") + 1);
      const std::string id_hex = text.substr(0, text.find(' '));
      const std::string name = text.find(' ') == std::string::npos ? "" : text.substr(text.find(' ') + 1);
      const std::optional<uint64_t> id = parse_id_hex(id_hex);
      bool still_there = false;
      for (const auto& x : info.members) still_there = still_there || (id && x.id == *id);
      if (!id) {
        // Damaged: it proves nothing was removed, so the member is looked for as on a first run.
        spdlog::warn("ignoring {}: it names no member ID ({})", replacing_marker(), text);
      } else if (name != o_.replace && id_hex != o_.replace) {
        spdlog::info("ignoring {}: it records the replacement of {}, not {}", replacing_marker(), text, o_.replace);
      } else if (!still_there) {
        spdlog::info("member {} was removed by an earlier run of this join --replace", text);
        return;
      }
      // Otherwise the member we are replacing is still there: go on removing it.
    }
    // This host's member already in the cluster, serving from this host's data: a re-run after
    // the replacement was done (under the old name or a new one).
    const MemberInfo* mine = find_member_by_peer_url(info, m_.peer_url());
    const MemberInfo* target = find_member(info, o_.replace);
    if (mine != nullptr && (target == nullptr || target == mine) && member_healthy(*mine) && resuming() &&
        !is_empty_data_dir(m_.data_dir)) {
      spdlog::info("member {} ({:x}) runs on this host with its data: the replacement is done", mine->name, mine->id);
      return;
    }
    QuorumCheck q;
    const MemberInfo& old = checked_removal(info, o_.replace, o_.force_replace, q);
    if (std::any_of(old.peer_urls.begin(), old.peer_urls.end(),
                    [&](const std::string& u) { return u == m_.peer_url(); }) &&
        !is_empty_data_dir(m_.data_dir)) {
      throw Error(ErrorKind::kAlreadyExists,
                  "data dir " + m_.data_dir + " is not empty, and the member being replaced used this peer URL",
                  "the replacement starts from an empty data dir: run `etcdadm reset --skip-remove-member` first");
    }
    spdlog::info("checked: member {} ({:x}) can be replaced: {}", old.name, old.id, q.explanation);
    if (!remove) return;
    make_dirs(m_.config_dir);
    write_file_atomic(replacing_marker(), fmt::format("{:x} {}\n", old.id, old.name), 0600, /*overwrite=*/true);
    EtcdClient remover(connection_to(client_side, client_urls_except(info, old.id)));
    remove_member_through(remover, old.id, old.name.empty() ? o_.replace : old.name);
    failpoint("join/replace/removed");
  }

  void install() {
    if (o_.skip_install) {
      for (const auto& bin : {m_.etcd_binary(), m_.etcdctl_binary()}) {
        if (!path_exists(bin)) throw Error(ErrorKind::kNotFound, bin + " does not exist", "run the install phase");
      }
      return;
    }
    ReleaseSpec spec = o_.release;
    spec.version = m_.version;
    auto installed = install_release(spec, m_.install_dir);
    m_.version = installed.version;
    spdlog::info("etcd {} installed in {} (from {})", installed.version, m_.install_dir, installed.source);
  }

  void certificates() {
    const KeyAlgorithm ca_algorithm = o_.key_algorithm.value_or(KeyAlgorithm::kRsa2048);
    if (!join_ && ensure_ca(m_.certs_dir, ca_algorithm)) {
      spdlog::info("created a new CA ({} key) in {}", key_algorithm_name(ca_algorithm), m_.certs_dir);
    }
    if (join_ && (!path_exists(m_.ca_cert()) || !path_exists(m_.ca_key()))) {
      throw Error(ErrorKind::kNotFound, "no CA in " + m_.certs_dir,
                  "copy ca.crt and ca.key from a member of the cluster");
    }
    if (join_) ensure_ca(m_.certs_dir);  // checks that the key matches the certificate
    MemberPkiSpec spec = member_pki_spec(m_);
    spec.key_algorithm = o_.key_algorithm;
    auto issued = ensure_member_certs(spec);
    for (const auto& s : issued) spdlog::info("issued {} ({} key)", m_.cert(s), key_algorithm_of_cert(m_.cert(s)));
    // A list no TLS 1.2 client could use with this key: etcd would start, and refuse every client
    // (etcdctl 3.4, libraries without TLS 1.3) that does not speak TLS 1.3.
    const std::string server_key = key_algorithm_of_cert(m_.cert("server"));
    if (!m_.cipher_suites.empty() && !cipher_suites_fit_key(m_.cipher_suites, server_key)) {
      throw Error(ErrorKind::kInvalidArgument,
                  "none of --cipher-suites can be used with the server certificate's " + server_key +
                      " key: TLS 1.2 clients could not connect",
                  server_key.rfind("ec", 0) == 0
                      ? "add a TLS_ECDHE_ECDSA_ suite"
                      : "add a TLS_ECDHE_RSA_ suite, or --key-algorithm ecdsa-p256 for a new CA");
    }
  }

  ClusterBootstrap init_bootstrap() {
    ClusterBootstrap b;
    b.initial_cluster = o_.initial_cluster.empty() ? m_.name + "=" + m_.peer_url() : o_.initial_cluster;
    b.token = o_.initial_cluster_token;
    if (b.token.empty() && path_exists(restore_marker())) {
      b.token = read_file(restore_marker());  // the token the data dir was restored with (first line)
      b.token = b.token.substr(0, b.token.find('\n'));
    }
    if (b.token.empty() && !o_.restore_snapshot && path_exists(m_.env_file())) {
      b.token = env_value(parse_env_file(read_file(m_.env_file())), "ETCD_INITIAL_CLUSTER_TOKEN");  // a resumed init
    }
    if (b.token.empty()) b.token = "etcd-cluster-" + random_suffix() + random_suffix();
    return b;
  }

  void snapshot() {
    if (!o_.restore_snapshot) {
      spdlog::info("no snapshot given: starting an empty cluster");
      return;
    }
    if (!bootstrap_) bootstrap_ = init_bootstrap();
    if (!is_empty_data_dir(m_.data_dir)) {
      if (restored_earlier()) {
        spdlog::info("data dir {} already restored by an earlier run: not restoring again", m_.data_dir);
        return;
      }
      throw Error(ErrorKind::kAlreadyExists, "data dir " + m_.data_dir + " is not empty: refusing to restore over it",
                  "run `etcdadm reset` first");
    }
    const int64_t revision = o_.restore_snapshot(m_, *bootstrap_);
    save_member_state(m_);
    // The token, and the revision the member serves (the health phase compares the peers' data
    // at it when the whole cluster was restored at once).
    write_file_atomic(restore_marker(), bootstrap_->token + "\n" + std::to_string(revision) + "\n", 0600,
                      /*overwrite=*/true);
    spdlog::info("restored into {} as the first member of a new cluster (token {})", m_.data_dir, bootstrap_->token);
  }

  std::unique_ptr<EtcdClient> cluster_client() {
    return std::make_unique<EtcdClient>(connection_to(m_, {o_.join_endpoint}));
  }

  RetryPolicy membership_retry() const {
    RetryPolicy p;
    p.max_attempts = o_.retry ? 8 : 1;
    p.base_delay = 500ms;
    p.max_delay = 10s;
    // etcd (strict reconfig check) refuses a change as "unhealthy cluster" until every member has
    // been connected for 5 s: a join right after another one meets it (CI on 3.4: eight jittered
    // tries spent in 4.4 s).
    if (o_.retry) p.min_elapsed = 15s;
    return p;
  }

  void membership() {
    if (o_.join_endpoint.empty()) throw Error(ErrorKind::kInvalidArgument, "no endpoint to join given");
    if (!o_.replace.empty()) replacement(/*remove=*/true);
    auto client = cluster_client();
    with_retries(membership_retry(), "adding member " + m_.name + " through " + o_.join_endpoint, [&] {
      auto list = client->member_list();
      if (const auto* me = find_by_peer_url(list, m_.peer_url())) {
        spdlog::info("member {} ({}) is already in the cluster{}: continuing", m_.name, m_.peer_url(),
                     me->islearner() ? " as a learner" : "");
        member_id_ = me->id();
        learner_ = me->islearner();
        record_cluster(list.members());
        return;
      }
      for (const auto& m : list.members()) {
        if (m.name() == m_.name) {
          throw Error(ErrorKind::kAlreadyExists,
                      "the cluster already has a member named " + m_.name + " with peer URL " +
                          (m.peerurls().empty() ? "?" : m.peerurls(0)),
                      "choose another --name, or remove the old member first (etcdadm reset on its host, or etcdctl "
                      "member remove)");
        }
      }
      if (!is_empty_data_dir(m_.data_dir)) {
        // An earlier member's data (it was removed from the cluster since): etcd would start with
        // the old member ID and be refused as removed.
        throw Error(ErrorKind::kAlreadyExists,
                    "data dir " + m_.data_dir + " holds the data of a member the cluster no longer has",
                    "run `etcdadm reset --skip-remove-member` (same --config-dir) and join again");
      }
      etcdserverpb::MemberAddResponse added;
      try {
        added = client->member_add({m_.peer_url()}, /*learner=*/true);
      } catch (const Error& e) {
        if (e.mentions("too many learner")) {
          // etcd allows one learner at a time: another join is still catching up, or was abandoned.
          std::string pending;
          for (const auto& m : list.members()) {
            if (m.islearner()) {
              pending += fmt::format("{}{:x} ({})", pending.empty() ? "" : ", ", m.id(),
                                     m.peerurls().empty() ? "?" : m.peerurls(0));
            }
          }
          throw Error(ErrorKind::kUnavailable, std::string(e.what()) + ": pending learner " + pending,
                      "wait until that join has finished; if it was abandoned, remove it with `etcdctl member remove "
                      "<id>` and run this again");
        }
        if (e.mentions("Peer URLs already exists") || e.mentions("peerURL exists")) {
          throw Error(ErrorKind::kUnavailable, "member add raced with an earlier attempt: looking again");
        }
        throw;
      }
      member_id_ = added.member().id();
      learner_ = added.member().islearner();
      if (!learner_) spdlog::warn("the cluster does not support learners: {} was added as a voting member", m_.name);
      spdlog::info("added member {} (ID {:x}){}", m_.name, member_id_, learner_ ? " as a learner" : "");
      record_cluster(added.members());
    });
  }

  void record_cluster(const google::protobuf::RepeatedPtrField<etcdserverpb::Member>& members) {
    ClusterBootstrap b;
    b.initial_cluster = initial_cluster_from(members, m_);
    b.existing = true;
    b.token = "etcd-cluster";  // ignored by etcd when joining an existing cluster
    bootstrap_ = b;
    m_.cluster_endpoints = client_urls_of(members);
    if (std::find(m_.cluster_endpoints.begin(), m_.cluster_endpoints.end(), m_.client_url()) ==
        m_.cluster_endpoints.end()) {
      m_.cluster_endpoints.push_back(m_.client_url());
    }
  }

  void configure() {
    if (!bootstrap_) {
      if (join_) {
        // Run on its own: the membership phase ran before, so the cluster knows this member.
        auto list = cluster_client()->member_list();
        const auto* me = find_by_peer_url(list, m_.peer_url());
        if (me == nullptr) {
          throw Error(ErrorKind::kNotFound, "member " + m_.peer_url() + " is not in the cluster",
                      "run the membership phase first");
        }
        learner_ = me->islearner();
        record_cluster(list.members());
      } else {
        bootstrap_ = init_bootstrap();
      }
    }
    // The first member: the cluster is itself. (A member of a whole cluster restored at once
    // records only itself too: reset and member remove ask it for the member list.)
    if (!join_) m_.cluster_endpoints = {m_.client_url()};
    make_dirs(m_.config_dir);
    EnvVars env = member_env(m_, *bootstrap_);
    if (first_start_of_restore()) env = without_initial_corruption_check(env);
    if (join_ && learner_) {
      env = with_env_value(env, kQuotaBackendBytesVar, std::to_string(catch_up_quota()));
      spdlog::info("the learner catches up under twice the quota ({} bytes); promoted on the quota itself",
                   catch_up_quota());
    }
    write_file_atomic(m_.env_file(), render_env_file(env), 0600, /*overwrite=*/true);
    save_member_state(m_);
    auto files = init_system_->configure(m_);
    spdlog::info("wrote {}, {}{}", m_.env_file(), m_.state_file(), files.empty() ? "" : ", " + join_csv(files));
  }

  // A member restored from a snapshot whose etcd has not run on it yet: started without etcd's
  // initial corruption check (without_initial_corruption_check), which its env file gets back as
  // soon as etcd was started (a kubelet's manifest keeps what it was written with until the next
  // configure, a version change's included).
  bool first_start_of_restore() const {
    return o_.restore_snapshot && !join_ && !init_system_->running(m_) && path_exists(restore_marker());
  }

  void start() {
    init_system_->start(m_);
    spdlog::info("etcd started through {}", init_system_name(m_.init_system));
    // etcd read its variables when it started: from its next start on it runs etcd's checks.
    write_corruption_checks(m_);
  }

  void etcdctl() {
    write_etcdctl_files(m_);
    spdlog::info("wrote {} and {}", m_.etcdctl_env_file(), m_.etcdctl_wrapper());
  }

  std::string start_hint() const { return member_log_hint(m_); }
  bool alive() { return member_alive(m_, *init_system_); }
  void wait_healthy(EtcdClient& local) { wait_member_healthy(m_, local, *init_system_, o_.start_timeout); }

  void health() {
    EtcdClient local(local_connection(m_));
    wait_healthy(local);
    member_id_ = local.status(m_.loopback_client_url()).header().member_id();
    result_.member_id = member_id_;
    if (!o_.initial_cluster.empty() && path_exists(restore_marker())) check_peers_restored_the_same(local);
    remove_all(restore_marker());
  }

  // The whole cluster restored at once: every host must have restored the same snapshot. etcd
  // cannot tell (the WAL and membership are the same whatever db each host wrote, so raft forms
  // the cluster and the members silently serve different data), so the members that are up are
  // asked for their KV hash at the restored revision; one that differs means the hosts disagree
  // (`latest` resolved differently, another --to-revision): this member stops and init fails.
  // A restore that moved the revision (a Kubernetes keyspace) is compacted up to it, and etcd 3.4
  // answers no HashKV at its compaction's revision (3.5+ answer from the compaction's record): there
  // each member's revision and key count, read from its own data, are compared instead.
  void check_peers_restored_the_same(EtcdClient& local) {
    std::string marker = read_file(restore_marker());
    const int64_t revision = std::strtoll(marker.substr(marker.find('\n') + 1).c_str(), nullptr, 10);
    if (revision <= 0) {
      spdlog::warn("the restored revision is not known (a tool restore): the peers' data is not compared");
      return;
    }
    bool by_count = false;
    std::string own;
    try {
      own = std::to_string(local.hash_kv(m_.loopback_client_url(), revision).hash());
    } catch (const Error& e) {
      if (!e.mentions("compacted")) throw;
      by_count = true;
      own = revision_and_key_count(local, m_.loopback_client_url());
    }
    const std::string what = by_count ? "revision and key count" : "KV hash at revision " + std::to_string(revision);
    int compared = 0;
    const auto list = local.member_list();
    for (const auto& member : list.members()) {
      if (member.id() == member_id_ || member.clienturls().empty()) continue;  // not started yet: it checks us
      const std::string url = member.clienturls(0);
      std::string differs;
      try {
        EtcdClient peer(connection_to(m_, {url}));
        const std::string theirs =
            by_count ? revision_and_key_count(peer, url) : std::to_string(peer.hash_kv(url, revision).hash());
        if (theirs != own) differs = "its " + what + " is " + theirs + ", this member's " + own;
        ++compared;
      } catch (const Error& e) {
        if (e.mentions("future revision")) {
          differs = "it has no revision " + std::to_string(revision) + " (it restored an older snapshot)";
        } else if (e.mentions("compacted")) {
          differs = "its revision " + std::to_string(revision) + " is compacted (it restored a newer snapshot)";
        } else {
          spdlog::warn("could not compare with member {} ({}): {}", member.name(), url, e.what());
          continue;
        }
      }
      if (differs.empty()) continue;
      spdlog::error("member {} serves other data than this one: stopping this member", member.name());
      init_system_->stop(m_, std::chrono::seconds(10));
      throw Error(ErrorKind::kCorrupt,
                  "member " + member.name() + " (" + url + ") restored other data than this host: " + differs,
                  "every host must restore the same backup: give its name (not 'latest') and the same "
                  "--to-revision/--to-time on each; then `etcdadm reset --skip-remove-member --force` here and run "
                  "init again");
    }
    spdlog::info("the {} member(s) up restored the same data as this one ({}: {})", compared, what, own);
  }

  // What `client` (one member) serves, from its own data (serializable): "revision R, N keys".
  static std::string revision_and_key_count(EtcdClient& client, const std::string& endpoint) {
    const int64_t served = client.status(endpoint).header().revision();
    etcdserverpb::RangeRequest all;
    all.set_key(std::string(1, '\0'));
    all.set_range_end(std::string(1, '\0'));
    all.set_count_only(true);
    all.set_serializable(true);
    return "revision " + std::to_string(served) + ", " + std::to_string(client.range(all).count()) + " keys";
  }

  // A learner catches up by replaying the leader's raft log (etcd sends it a snapshot only once the
  // leader's log no longer holds what it lacks). Replayed without the defragmentations the others
  // had, a history that once came near the quota leaves its db file as large as that peak, and
  // etcd's quota check compares the file's size (not what is in use): the learner raises NOSPACE
  // on the next write, and the whole cluster refuses writes because a member joined (seen on 3.5
  // after a NOSPACE recovery: every join raised it again). So a learner catches up under twice
  // the quota (configure), is defragmented when its file would not fit the real quota, and starts
  // again on the real quota before it is promoted: one restart of a member that has no vote yet.
  int64_t quota() const { return m_.quota_backend_bytes > 0 ? m_.quota_backend_bytes : kEtcdDefaultQuotaBytes; }
  int64_t catch_up_quota() const { return 2 * quota(); }

  void wait_started(EtcdClient& local) {
    wait_until(
        "start of member " + m_.name, o_.start_timeout, [&] { local.status(m_.loopback_client_url()); },
        [&] { return alive(); }, start_hint());
  }

  // etcd serves a learner no Defragment: its data dir is defragmented while it is stopped, by the
  // release's own tool (etcdutl from 3.5, etcdctl before).
  void defragment_stopped_learner() {
    const bool etcdutl = path_exists(m_.install_dir + "/etcdutl");
    RunOptions ro;
    ro.timeout = std::chrono::minutes(30);
    if (!etcdutl && wants_etcdctl_api_variable(m_.version)) ro.env["ETCDCTL_API"] = "3";
    const auto r = run_process(
        {etcdutl ? m_.install_dir + "/etcdutl" : m_.etcdctl_binary(), "defrag", "--data-dir", m_.data_dir}, ro);
    if (r.exit_code != 0)
      throw Error(ErrorKind::kExternalTool, "defragmenting the stopped learner's data dir failed: " + r.output,
                  "run join again: the learner catches up under twice the quota again first");
  }

  void leave_catch_up_quota(std::unique_ptr<EtcdClient>& local, const etcdserverpb::MemberListResponse& list) {
    const std::optional<std::string> real =
        m_.quota_backend_bytes > 0 ? std::optional(std::to_string(m_.quota_backend_bytes)) : std::nullopt;
    if (env_value(parse_env_file(read_file(m_.env_file())), kQuotaBackendBytesVar) == real.value_or("")) return;
    wait_caught_up(
        *local, m_.loopback_client_url(), "catching up of learner " + m_.name,
        [&](uint64_t id) {
          for (const auto& x : list.members())
            if (x.id() == id && x.clienturls_size() > 0) return x.clienturls(0);
          return std::string();
        },
        o_.promote_timeout, [&] { return alive(); }, start_hint());
    const auto st = local->status(m_.loopback_client_url());
    // etcd's quota check refuses a write once the file and the write reach the quota: a file over
    // 90% of it leaves too little room.
    const bool too_large = st.dbsize() >= quota() / 10 * 9;
    set_member_env(m_, kQuotaBackendBytesVar, real);
    init_system_->configure(m_);  // a static pod's flags are its manifest's: written again from the env file
    // Closed first: etcd's graceful stop waits for open client connections (measured: 1.6 s with one).
    local.reset();
    init_system_->stop(m_, std::chrono::milliseconds(10000));
    failpoint("join/catch-up-quota/stopped");
    if (too_large) {
      spdlog::info(
          "learner {} caught up with a db file of {} bytes ({} in use), over 90% of the quota ({}): "
          "defragmenting it, stopped, before its promotion",
          m_.name, st.dbsize(), st.dbsizeinuse(), quota());
      defragment_stopped_learner();
    }
    init_system_->start(m_);
    local = std::make_unique<EtcdClient>(local_connection(m_));
    wait_started(*local);
    spdlog::info("learner {} runs on the quota itself ({} bytes){}", m_.name, quota(),
                 too_large ? ", its db file defragmented" : "");
  }

  void promote() {
    auto local = std::make_unique<EtcdClient>(local_connection(m_));
    wait_started(*local);
    auto client = cluster_client();
    if (member_id_ == 0) {
      auto list = client->member_list();
      const auto* me = find_by_peer_url(list, m_.peer_url());
      if (me == nullptr) throw Error(ErrorKind::kNotFound, "member " + m_.peer_url() + " is not in the cluster");
      member_id_ = me->id();
      learner_ = me->islearner();
    }
    if (learner_) {
      leave_catch_up_quota(local, client->member_list());
      wait_until(
          "promotion of learner " + m_.name, o_.promote_timeout,
          [&] {
            try {
              client->member_promote(member_id_);
              spdlog::info("learner {} caught up and was promoted to a voting member", m_.name);
            } catch (const Error& e) {
              // etcd's ErrMemberNotLearner: promoted already (an earlier attempt whose answer was lost).
              if (e.mentions("can only promote a learner member") && !e.mentions("in sync with leader")) return;
              throw;
            }
          },
          [&] { return alive(); },
          "the learner did not catch up with the leader; " + start_hint() + " and check the network between members",
          [](const Error& e) {
            return e.mentions("in sync with leader") || e.mentions("unhealthy cluster") ||
                   e.mentions("not enough started members") || is_retryable(e);
          });
    }
    wait_healthy(*local);
    result_.member_id = member_id_;
    // Now a voter: remember the current members, through which reset reaches the cluster later.
    record_cluster(client->member_list().members());
    save_member_state(m_);
    remove_all(m_.config_dir + "/replacing");  // the replacement is a voter now
  }

  LifecycleOptions o_;
  MemberConfig& m_;
  bool join_;
  std::unique_ptr<InitSystem> init_system_;
  std::optional<ClusterBootstrap> bootstrap_;
  uint64_t member_id_ = 0;
  bool learner_ = false;
  LifecycleResult result_;
};

}  // namespace

void check_phase_name(const std::vector<Phase>& phases, const std::string& name) {
  for (const auto& p : phases) {
    if (p.name == name) return;
  }
  std::string names;
  for (const auto& p : phases) names += (names.empty() ? "" : ", ") + p.name;
  throw Error(ErrorKind::kInvalidArgument, "unknown phase '" + name + "'", "phases: " + names);
}

const std::vector<Phase>& init_phases() {
  static const std::vector<Phase> phases = Runner::phases_of(Runner::init_steps());
  return phases;
}

const std::vector<Phase>& join_phases() {
  static const std::vector<Phase> phases = Runner::phases_of(Runner::join_steps());
  return phases;
}

LifecycleResult run_init(const LifecycleOptions& options, const std::string& phase) {
  return Runner(options, /*join=*/false).run(Runner::init_steps(), phase);
}

LifecycleResult run_join(const LifecycleOptions& options, const std::string& phase) {
  return Runner(options, /*join=*/true).run(Runner::join_steps(), phase);
}

}  // namespace etcdadm

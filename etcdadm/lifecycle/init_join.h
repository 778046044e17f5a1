// The member lifecycle: init (first member), join (add a member through an existing one), reset
// (take a member away) and info. init and join are sequences of named phases that can also run one
// at a time (`etcdadm init phase <name>`), like etcdadm; every phase is safe to run again, so a
// command that failed half way is finished by running it again.
//
//   init:  preflight, install, certificates, snapshot, configure, start, etcdctl, health
//   join:  preflight, install, certificates, membership, configure, start, etcdctl, promote
//          (join --replace NAME removes the failed member NAME in membership, before the add)
//
// join adds the new member as a raft learner (it cannot vote, so a slow or broken newcomer never
// costs the cluster its quorum), waits until it has caught up with the leader and then promotes
// it. Only servers without learner support get a voting member straight away.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "etcd/connection.h"
#include "etcdadm/member_config.h"
#include "etcdadm/pki.h"
#include "etcdadm/release/fetch.h"

namespace etcdadm {

// Fills a new member's empty data dir from a snapshot (init --snapshot / --from-backup). Supplied
// by the layer above (restore/), which knows about backup stores; it must restore with exactly
// this member's name, peer URL, initial cluster and token, and leave the data dir untouched on failure.
// Returns the revision the restored member will serve (0: not known, e.g. restored by a tool).
using SnapshotRestorer = std::function<int64_t(const MemberConfig& member, const ClusterBootstrap& bootstrap)>;

struct LifecycleOptions {
  MemberConfig member;
  ReleaseSpec release;
  bool skip_install = false;  // binaries are already in install-dir (checked, not fetched)
  // The key of a CA init creates (nullopt: RSA 2048) and of the member certificates (nullopt: the
  // CA's algorithm, so that joins follow the cluster without being told).
  std::optional<KeyAlgorithm> key_algorithm;

  // init
  std::string initial_cluster_token;  // empty: a fresh random token (always fresh for restores)
  SnapshotRestorer restore_snapshot;  // empty: a new, empty cluster
  // The whole cluster restored at once (etcd's own disaster-recovery procedure): every member's
  // "name=peerURL", this one's among them, restored from the same snapshot with the same token
  // (required) on each host, started together; quorum comes as soon as a majority runs, and no
  // snapshot is shipped between members. Empty: this member alone (others join it).
  std::string initial_cluster;
  // With initial_cluster and no snapshot: every listed member starts empty at once (etcd's static
  // bootstrap), as the controllers do from their plan (controller/decide.h). People start a new
  // cluster with one member and join the others.
  bool static_bootstrap = false;

  // join
  std::string join_endpoint;  // client URL of an existing member
  bool retry = true;          // retry transient failures with backoff (etcdadm's --retry)
  // join --replace: the failed member (name or hex ID) this one takes the place of. It is removed
  // through a healthy member in the membership phase (checked in preflight: it must not answer,
  // unless force_replace, and the cluster must keep quorum without it); a re-run after a failure
  // finds the removal done (<config-dir>/replacing records it).
  std::string replace;
  bool force_replace = false;

  std::chrono::seconds start_timeout{120};    // until the started member answers
  std::chrono::seconds promote_timeout{300};  // until the learner has caught up
};

struct Phase {
  std::string name;
  std::string description;
};
// The `etcdadm join` command `init` prints for the next member: the same release source (URL,
// tarball, binaries dir, checksum, cache) and the same non-default layout, so that it works as
// printed on a host laid out like this one, offline included; the new member's --name and
// --bind-address are its own (defaults: host name, primary IPv4).
std::string join_command_for(const LifecycleOptions& options, const MemberConfig& member);

// Throws kInvalidArgument naming the phases when `name` is not one of them.
void check_phase_name(const std::vector<Phase>& phases, const std::string& name);

const std::vector<Phase>& init_phases();
const std::vector<Phase>& join_phases();

// What init/join report at the end.
struct LifecycleResult {
  uint64_t member_id = 0;
  std::string client_url;
  std::string join_command;  // init: the command to run on the next member
  std::vector<std::string> phases_run;
};

// Runs every phase, or only `phase` when given (throws kInvalidArgument for an unknown name).
LifecycleResult run_init(const LifecycleOptions& options, const std::string& phase = {});
LifecycleResult run_join(const LifecycleOptions& options, const std::string& phase = {});

}  // namespace etcdadm

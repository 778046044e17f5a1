// `etcdadm auto adopt`: a running cluster that the controllers of a store did not create (made by
// hand with init/join, by kubeadm) handed to them in place. Nothing is restarted: the command checks
// that the cluster is healthy and that every member runs beside a controller of the store holding
// the cluster's CA, then writes what the controllers would have written had they created it, each by
// the usual conditional write: the spec (from what runs, unless `seed` wrote one), a plan of purpose
// "adopt" naming the cluster, and etcd-manager's etcd-cluster-created marker. Until then their rule
// O leaves such a member alone (controller/decide.cc). docs/self-management.md, "Adopting a running
// cluster".
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "controller/record_auth.h"
#include "controller/records.h"
#include "controller/status.h"
#include "etcd/connection.h"
#include "etcdadm/lifecycle/local_member.h"
#include "store/blob_store.h"

namespace etcdadm {

struct AdoptRequest {
  // The cluster's CA and a client certificate it signed. Without endpoints, the client URLs of the
  // hosts' records that run a member.
  ConnectionConfig connection;
  std::string ca_sha256;  // ca_fingerprint of the CA that signed the members' certificates
  // A host's record older than this (by this host's clock) is a host whose controller does not
  // answer: the controllers' own --host-timeout.
  std::chrono::seconds host_timeout{90};
  std::string by;  // user@host, into the plan and the event
  int64_t now_unix = 0;
  bool dry_run = false;
};

struct AdoptResult {
  ClusterInfo cluster;
  ClusterPlan plan;                  // the plan written (or, adopted before, found)
  EtcdManagerClusterSpec spec;       // what the controllers obey from now
  std::optional<SeedResult> seeded;  // the spec written from the running cluster; absent: the store's kept
  std::string effect;                // what the controllers do next, in a sentence
  bool already_adopted = false;      // a re-run: the plan and the marker were there
};

// The checks, then the writes (none under `dry_run`). kUnavailable with every reason when the
// cluster or its hosts are not ready to be adopted; kAlreadyExists when the store already runs
// another cluster (its created marker or another plan); kNotFound when the keyring cannot sign.
AdoptResult adopt_running_cluster(BlobStore& store, const RecordKeyring& keyring, const AdoptRequest& request);

// Why the cluster and the hosts' records do not allow an adoption, one sentence each (empty: they
// do): the pure part of adopt_running_cluster, unit-tested.
std::vector<std::string> adoption_refusals(const ClusterInfo& cluster, const std::vector<HostRecord>& hosts,
                                           const std::string& ca_sha256, int64_t now_unix,
                                           std::chrono::seconds host_timeout);

}  // namespace etcdadm

#include "controller/adopt.h"

#include <algorithm>
#include <set>

#include "common/error.h"
#include "common/failpoint.h"
#include "common/text.h"
#include "store/blob_capabilities.h"
#include "store/etcd_manager.h"

namespace etcdadm {

namespace {

std::string label(const MemberInfo& m) {
  return (m.name.empty() ? std::string("(unstarted)") : m.name) + " (" + id_hex(m.id) + ")";
}

bool lists(const std::vector<std::string>& urls, const std::string& url) {
  return std::find(urls.begin(), urls.end(), url) != urls.end();
}

}  // namespace

std::vector<std::string> adoption_refusals(const ClusterInfo& cluster, const std::vector<HostRecord>& hosts,
                                           const std::string& ca_sha256, int64_t now_unix,
                                           std::chrono::seconds host_timeout) {
  std::vector<std::string> why;
  if (cluster.leader_id == 0) why.push_back("no member names a leader: the cluster is not healthy");
  std::set<std::string> versions;
  for (const auto& m : cluster.members) {
    if (m.learner) {
      why.push_back("member " + label(m) +
                    " is a learner: a join is under way; finish it (etcdadm join) or remove "
                    "the learner first");
      continue;
    }
    if (m.name.empty()) {
      why.push_back("member " + id_hex(m.id) + " was added but never started: start it or remove it first");
      continue;
    }
    if (!m.reachable) {
      why.push_back("member " + label(m) + " does not answer: " + m.status_error);
      continue;
    }
    for (const auto& e : m.errors) why.push_back("member " + label(m) + " reports: " + e);
    versions.insert(m.version);
    const HostRecord* host = nullptr;
    for (const auto& h : hosts) {
      if (h.member_id == m.id) host = &h;
    }
    if (host == nullptr) {
      why.push_back("member " + label(m) +
                    " has no host running etcdadm auto on this store: start it on the "
                    "member's host with the member's own flags (its --name, --data-dir, URLs and --certs-dir)");
      continue;
    }
    if (!lists(m.peer_urls, host->peer_url)) {
      why.push_back("host " + host->name + " records member " + id_hex(m.id) + " at " + host->peer_url +
                    ", but the member's peer URLs are " + join_list(m.peer_urls) +
                    ": its etcdadm auto runs with other flags than the member");
    }
    if (host->data != DataState::kMember || !host->etcd_running) {
      why.push_back("host " + host->name + " does not report its member running (" + data_state_name(host->data) +
                    (host->etcd_running ? "" : ", etcd not running") + ")");
    }
    if (std::llabs(now_unix - host->heartbeat_unix) > host_timeout.count()) {
      why.push_back("host " + host->name + "'s record was last written " +
                    std::to_string(now_unix - host->heartbeat_unix) +
                    " s ago by this host's clock: its etcdadm auto does not answer (or a clock is wrong)");
    }
  }
  if (versions.size() > 1) {
    why.push_back("the members run different etcd versions (" + join_list({versions.begin(), versions.end()}) +
                  "): a version change is under way; finish it first");
  }
  for (const auto& h : hosts) {
    if (h.ca_sha256 != ca_sha256) {
      why.push_back("host " + h.name + " holds another CA (" + h.ca_sha256.substr(0, 12) + "..., the cluster's is " +
                    ca_sha256.substr(0, 12) +
                    "...): the CA on the hosts differs; give it the cluster's ca.crt and "
                    "ca.key, or remove its record");
    }
  }
  return why;
}

AdoptResult adopt_running_cluster(BlobStore& store, const RecordKeyring& keyring, const AdoptRequest& request) {
  if (!keyring.can_sign()) {
    throw Error(ErrorKind::kNotFound,
                "no ca.key in the certs dir: the controllers act only on records the cluster CA signed",
                "run adopt with --certs-dir of a host that holds the cluster's ca.key");
  }
  const RecordPolicy policy{&keyring, false};
  std::vector<std::string> unreadable;
  const std::vector<HostRecord> hosts = read_host_records(store, &unreadable, &policy);
  std::vector<std::string> why;
  for (const auto& u : unreadable) why.push_back("a host record cannot be taken: " + u);

  ConnectionConfig connection = request.connection;
  if (connection.endpoints.empty()) {
    for (const auto& h : hosts) {
      if (h.data == DataState::kMember && !h.client_url.empty()) connection.endpoints.push_back(h.client_url);
    }
  }
  if (connection.endpoints.empty()) {
    throw Error(ErrorKind::kUnavailable,
                "no host record of " + store.url() + " runs a member, and no --endpoints were given: nothing to adopt",
                "start etcdadm auto on every member's host with the member's own flags, then adopt");
  }
  AdoptResult r;
  try {
    r.cluster = cluster_info(connection, 0);
  } catch (const Error& e) {
    throw Error(
        e.kind(), "the cluster does not answer through " + join_list(connection.endpoints) + ": " + e.what(),
        e.kind() == ErrorKind::kTls ? "the members' certificates must come from the CA in --certs-dir" : e.hint());
  }

  // What the store already says: a re-run finds its own plan; another cluster's plan or marker
  // means the controllers run another cluster from this store.
  auto& conditional = *capability<ConditionalWrites>(store);
  std::optional<ClusterPlan> plan;
  if (auto read = conditional.read_versioned(kAutoPlanKey, 1 << 20)) {
    if (std::string refusal = policy.refusal(kAutoPlanKey, read->contents); !refusal.empty()) {
      throw Error(ErrorKind::kAlreadyExists, refusal, "adopt into a store of its own");
    }
    plan = parse_cluster_plan(read->contents, store.url() + "/" + kAutoPlanKey);
  }
  const bool ours = plan && plan->purpose == "adopt" && plan->adopts_cluster_id == r.cluster.cluster_id;
  const bool created = read_etcd_manager_cluster_created(store).has_value();
  if (plan && !ours) {
    throw Error(ErrorKind::kAlreadyExists,
                store.url() + " holds plan " + std::to_string(plan->sequence) + " (" + plan->purpose + ") of " +
                    (plan->purpose == "adopt" ? "cluster " + id_hex(plan->adopts_cluster_id) : "another cluster") +
                    ": its controllers run that cluster, not " + id_hex(r.cluster.cluster_id),
                "adopt into a store of its own");
  }
  if (created && !ours) {
    throw Error(ErrorKind::kAlreadyExists,
                store.url() + " says a cluster was already created from it (" + kEtcdManagerClusterCreatedKey +
                    "): its controllers run that one",
                "adopt into a store of its own");
  }

  const std::optional<EtcdManagerClusterSpec> spec = read_etcd_manager_cluster_spec(store);
  if (ours && created) {  // a re-run: said, whatever the cluster's health now
    r.plan = *plan;
    r.already_adopted = true;
    if (spec) r.spec = *spec;
    r.effect = "the controllers run it as the spec says";
    return r;
  }
  for (auto& w : adoption_refusals(r.cluster, hosts, request.ca_sha256, request.now_unix, request.host_timeout))
    why.push_back(std::move(w));
  // A spec already in the store is kept, so it must be one the controllers obey: valid, and as
  // `etcdadm seed` signed it (a store writer's spec would otherwise be adopted with the cluster,
  // and the controllers would then refuse it and do nothing).
  if (spec) {
    uint64_t highest = 0;
    for (const auto& h : hosts) highest = std::max(highest, h.spec_generation);
    std::string problem = cluster_spec_problem(*spec);
    if (problem.empty()) {
      try {
        problem = spec_authority_problem(*spec, read_auto_spec(store, &policy), false, highest);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kCorrupt) throw;
        problem = e.what();  // a forged or garbled spec.json
      }
    }
    if (!problem.empty()) why.push_back("the store's spec is not one the controllers obey: " + problem);
  }
  if (!why.empty()) {
    std::string text = "cluster " + id_hex(r.cluster.cluster_id) + " cannot be adopted yet:";
    for (const auto& w : why) text += "\n  - " + w;
    throw Error(ErrorKind::kUnavailable, text, "nothing was written; run adopt again once each is dealt with");
  }

  std::vector<const MemberInfo*> voters;
  for (const auto& m : r.cluster.members) voters.push_back(&m);
  std::sort(voters.begin(), voters.end(), [](auto* a, auto* b) { return a->name < b->name; });
  const std::string version = voters.front()->version;

  if (spec) {
    r.spec = *spec;
  } else {
    r.seeded = seed_cluster_spec(store, EtcdManagerClusterSpec{static_cast<int>(voters.size()), version}, {}, keyring,
                                 request.dry_run);
    r.spec = r.seeded->after;
  }
  if (r.spec.member_count != static_cast<int>(voters.size()) || r.spec.etcd_version != version) {
    r.effect = "the spec asks for " + std::to_string(r.spec.member_count) + " members of etcd " + r.spec.etcd_version +
               ": once adopted, the controllers move the cluster there from " + std::to_string(voters.size()) + " of " +
               version + ", one change at a time";
  } else {
    r.effect = "the cluster is as the spec says: the controllers keep it so (nothing is restarted)";
  }

  if (ours) {  // written before a kill: the marker is what is left
    r.plan = *plan;
  } else {
    r.plan.sequence = 1;
    r.plan.purpose = "adopt";
    r.plan.adopts_cluster_id = r.cluster.cluster_id;
    r.plan.cluster_token = "adopted-" + id_hex(r.cluster.cluster_id);
    r.plan.etcd_version = version;
    r.plan.ca_sha256 = request.ca_sha256;
    for (const auto* m : voters)
      r.plan.members.push_back(PlannedMember{m->name, m->peer_urls.front(), m->client_urls.front()});
    r.plan.written_by = request.by;
    r.plan.written_unix = request.now_unix;
  }
  if (request.dry_run) return r;

  if (!ours) {
    const std::string text = keyring.sign(kAutoPlanKey, cluster_plan_json(r.plan));
    if (!conditional.write_if(kAutoPlanKey, text, "")) {
      auto now = conditional.read_versioned(kAutoPlanKey, 1 << 20);
      if (!now || now->contents != text) {  // not ours with its answer lost: another writer came first
        throw Error(ErrorKind::kAlreadyExists, "another plan was written into " + store.url() + " meanwhile",
                    "etcdadm auto status --store " + store.url());
      }
    }
    failpoint("auto/adopt/planned");
  }
  if (!created) {
    try {
      store.write_small(kEtcdManagerClusterCreatedKey,
                        etcd_manager_cluster_created_json(request.now_unix * int64_t{1000000000}), /*overwrite=*/false);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kAlreadyExists) throw;  // a controller of the adopted cluster was first
    }
  }
  std::string names;
  for (const auto& m : r.plan.members) names += (names.empty() ? "" : ", ") + m.name;
  append_auto_event(store, AutoEvent{request.now_unix * int64_t{1000000}, request.by, "adopt",
                                     "cluster " + id_hex(r.cluster.cluster_id) + " of " + names + " on etcd " +
                                         r.plan.etcd_version + " handed to the controllers in place; " + r.effect,
                                     "etcdadm auto adopt --store " + store.url(), "done"});
  return r;
}

}  // namespace etcdadm

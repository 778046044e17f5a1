// Creating a cluster (controller/decide_creation.cc decides): the plan written once, this host's
// member created from it through init's phases, and etcd-manager's created marker.
#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/failpoint.h"
#include "common/fs.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "store/blob_capabilities.h"
#include "store/etcd_manager.h"

namespace etcdadm {

using namespace controller_internal;

// Writes the new cluster's plan if no plan exists (a conditional write: of two hosts planning at
// once, one plan is written and both follow it).
void Controller::plan_cluster(const Decision& d) {
  auto& conditional = *capability<ConditionalWrites>(*store_);
  const std::string text = keyring_.sign(kAutoPlanKey, cluster_plan_json(d.plan));
  if (conditional.write_if(kAutoPlanKey, text, "")) {
    failpoint("auto/create/planned");
    record("plan-cluster", d.reason, d.command, "done");
    return;
  }
  auto now = conditional.read_versioned(kAutoPlanKey, 1 << 20);
  if (now && now->contents == text) {  // ours: the answer to the write was lost
    record("plan-cluster", d.reason, d.command, "done");
  } else {
    spdlog::info("auto: another host planned the cluster first: following its plan");
  }
}

void Controller::start_planned_member(const ClusterPlan& plan) {
  // The device the member is made on is recorded now, not at the next round: a host that restarts
  // in between with its data volume not mounted yet must not take the empty mount point for an
  // empty host (found by the robustness harness, seed 10). The plan's sequence too: it fences off
  // any older plan written back into the store (a replayed restore plan is never carried out here).
  write_auto_local_state(member_.config_dir, AutoLocalState{plan.cluster_token, false, 0, 0, plan.sequence,
                                                            device_of_path(member_.data_dir)});
  LifecycleOptions o = options_.lifecycle;
  o.member.version = plan.etcd_version;
  o.release.version = plan.etcd_version;
  o.initial_cluster = plan.initial_cluster();
  o.initial_cluster_token = plan.cluster_token;
  o.static_bootstrap = true;
  // Every phase but the health wait: the member answers once a quorum of the plan has started,
  // and this controller goes on ticking (and heartbeating) meanwhile.
  for (const auto& phase : controller_phases(init_phases())) {
    run_init(o, phase);
    failpoint(("auto/create/" + phase).c_str());
  }
}

// Writes etcd-manager's etcd-cluster-created marker unless it exists (another member's
// controller may have been first).
void Controller::mark_created(const Decision& d) {
  try {
    store_->write_small(kEtcdManagerClusterCreatedKey,
                        etcd_manager_cluster_created_json(to_unix_micros(std::chrono::system_clock::now()) * 1000),
                        /*overwrite=*/false);
    record("mark-created", d.reason, d.command, "done");
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kAlreadyExists) throw;  // another member's controller was first
  }
}

}  // namespace etcdadm

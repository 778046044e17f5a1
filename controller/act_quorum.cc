// A lost quorum recovered by the controllers (the spec's recoverQuorum; rules L and RQ of
// controller/decide.cc): the plan written by the furthest survivor's host, and that host's member
// made a cluster of one by `etcdadm recover`'s own code (restore/recover.h), which refuses again,
// right before it changes anything, while a quorum answers with a leader or a member that answers
// is further along.
#include <spdlog/spdlog.h>

#include "common/failpoint.h"
#include "common/fs.h"
#include "common/text.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "restore/recover.h"

namespace etcdadm {

using namespace controller_internal;

void Controller::plan_quorum_recovery(const Decision& d, const Observation& o) {
  if (!replace_plan(d, "the quorum's recovery")) return;
  failpoint("auto/recover-quorum/planned");
  record(step_name(d.step), d.reason, d.command, "done: plan " + std::to_string(d.plan.sequence));
  write_command_spec(d, o);  // planned for a queued restore that asks for another spec
  store_view_.reset();
}

std::string Controller::recover_quorum_here(const ClusterPlan& plan) {
  RecoverOptions o;
  o.member = member_;
  o.store = store_;
  // The change log counts as the controllers' auto-restore takes it: the segments they tagged.
  o.segment_accepted = [this](const auto& s) { return segment_accepted(s); };
  o.cluster_token = plan.cluster_token;
  const RecoverResult r = run_recover(o);
  AutoLocalState state = read_auto_local_state(member_.config_dir);
  if (r.source == RecoverResult::Source::kChangeLog) state.cluster_token = plan.cluster_token;
  state.member_started = true;
  state.member_id = r.member_id;
  state.cluster_id = r.cluster_id;
  state.plan_sequence = plan.sequence;
  state.data_device = device_of_path(member_.data_dir);
  write_auto_local_state(member_.config_dir, state);
  return r.source == RecoverResult::Source::kChangeLog
             ? "a new cluster of one from member " + id_hex(plan.recovers_member_id) + "'s data and the change log (" +
                   std::to_string(r.log_records) + " revisions), revision " + std::to_string(r.revision) +
                   "; data set aside in " + r.set_aside
             : "a cluster of one from its own data at revision " + std::to_string(r.revision) + " (cluster " +
                   id_hex(r.cluster_id) + " kept); data set aside in " + r.set_aside;
}

}  // namespace etcdadm

// Membership (controller/decide_membership.cc decides): this host's member started, joined as an
// added learner, or forgotten once removed; the acting controller's adds, promotions and removals,
// each through the members as etcd sees them now and after a backup.
#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/failpoint.h"
#include "common/fs.h"
#include "common/text.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/member_health.h"
#include "etcdadm/quorum.h"

namespace etcdadm {

using namespace controller_internal;
using std::chrono::steady_clock;

// Starts this host's etcd through its init system, marking its output first: a refusal to start
// on inconsistent data is read from what it printed since (observe_local).
void Controller::start_local_member() {
  start_mark_ = init_system_->output_mark(member_);
  last_start_ = steady_clock::now();
  init_system_->start(member_);
}

void Controller::join_as_added(const Decision& d, const Observation& o) {
  // Joined after the current plan: its data belongs to the cluster that plan made. The member and
  // cluster it joins are recorded now, not from a later Status: removed again before this host's
  // next round, its etcd stops at once, and only these IDs tell the host it was removed (else it
  // would start that member again and again).
  AutoLocalState state;
  state.plan_sequence = o.plan ? o.plan->sequence : 0;
  state.member_id = d.member_id;
  state.cluster_id = o.cluster.info.cluster_id;
  state.data_device = device_of_path(member_.data_dir);  // as start_planned_member
  write_auto_local_state(member_.config_dir, state);
  LifecycleOptions opts = options_.lifecycle;
  opts.member.version = o.spec->etcd_version;
  opts.release.version = o.spec->etcd_version;
  opts.join_endpoint = d.join_endpoint;
  for (const auto& phase : controller_phases(join_phases())) {
    run_join(opts, phase);
    failpoint(("auto/join/" + phase).c_str());
  }
}

void Controller::forget_member(SetAside kind) {
  init_system_->stop(member_, std::chrono::seconds(10));
  failpoint("auto/forget/stopped");
  if (kind == SetAside::kNone) {
    remove_all(member_.data_dir + "/member");
  } else {
    if (kind == SetAside::kRemoved) {
      for (const auto& old : remove_set_asides(member_.data_dir, "removed-")) {
        spdlog::info("auto: deleted {}, an earlier removed member's data (only the newest is kept)", old);
      }
    }
    const uint64_t id = read_auto_local_state(member_.config_dir).member_id;
    const std::string aside = set_aside_data_dir(
        member_.data_dir, std::string(set_aside_name(kind)) + "-" + id_hex(id) + "-" + std::to_string(unix_now()));
    if (!aside.empty()) {
      spdlog::warn(
          "auto: this host's {} member's data is kept in {} for a person to look at (rm -rf {} once it is not needed)",
          set_aside_name(kind), aside, aside);
    }
  }
  AutoLocalState state;
  state.plan_sequence = read_auto_local_state(member_.config_dir).plan_sequence;
  write_auto_local_state(member_.config_dir, state);
}

void Controller::stop_and_set_aside(const std::string& label) {
  MemberConfig recorded;
  // A kubelet's even when not running: it may still be stopping an etcd whose manifest left earlier.
  if (load_member_state(member_.config_dir, recorded) &&
      (init_system_->kind() == InitSystemKind::kKubelet || init_system_->running(member_))) {
    init_system_->stop(member_, std::chrono::seconds(30));
  }
  const std::string aside = set_aside_data_dir(member_.data_dir, label);
  if (!aside.empty()) spdlog::info("auto: this host's old data is kept in {}", aside);
}

// Whether this host's member leads right now (asked again right before an acting controller's
// change: one that is no longer beside the leader does nothing, another one acts).
bool Controller::still_leads(const Decision& d) {
  auto status = pool_.client(member_.loopback_client_url()).status(member_.loopback_client_url());
  if (status.leader() == status.header().member_id()) return true;
  spdlog::info("auto: this member is no longer the leader: not acting ({})", step_name(d.step));
  return false;
}

// The acting controller's membership changes, each through the members as etcd sees them now.
void Controller::change_membership(const Decision& d, const Observation& o) {
  if (!still_leads(d)) return;
  EtcdClient* through = &pool_.client(member_.loopback_client_url());
  const char* action = step_name(d.step);
  // No backup before a corrupt member's removal: its data is kept whole on its host, the data that
  // stays is the majority's, and a backup now might be streamed from the corrupt member itself.
  if (d.step != Step::kPromoteMember && !d.corrupt) backup_before(d, options_.pre_change_backup_age);
  if (d.corrupt) {
    // Recorded first: its host's controller sets its data aside once it sees it removed.
    update_maintenance([&](MaintenanceRecord& m) { m.corrupt[d.member_id] = *d.corrupt; });
    failpoint("auto/corrupt/recorded");
  }
  try {
    if (d.step == Step::kAddMember) {
      auto r = through->member_add({d.host.peer_url}, /*learner=*/true);
      failpoint("auto/member/added");
      record(action, d.reason, d.command, "done: learner " + id_hex(r.member().id()));
    } else if (d.step == Step::kPromoteMember) {
      through->member_promote(d.member_id);
      record(action, d.reason, d.command, "done");
    } else {
      if (d.leadership_to != 0) {
        // This host's own member leads and goes: its leadership first, then the removal through
        // the new leader (a member removing itself may stop before it answers).
        const MemberInfo* next = nullptr;
        for (const auto& m : o.cluster.info.members)
          if (m.id == d.leadership_to) next = &m;
        if (next == nullptr || next->client_urls.empty())
          throw Error(ErrorKind::kUnavailable, "member " + id_hex(d.leadership_to) + " has no client URL");
        hand_leadership(*through, member_.loopback_client_url(), member_.name, next->id, member_label(*next),
                        member_log_hint(member_));
        through = &pool_.client(next->client_urls.front());
      }
      through->member_remove(d.member_id);
      if (!d.replaced_peer_url.empty()) replaced_at_[d.replaced_peer_url] = steady_clock::now();
      failpoint("auto/member/removed");
      record(action, d.reason, d.command, "done");
    }
  } catch (const Error& e) {
    // etcd refuses a promotion until the learner has caught up: that is waiting, not failing.
    if (d.step == Step::kPromoteMember && e.mentions("in sync")) {
      record(action, d.reason, d.command, "refused by etcd for now: the learner has not caught up yet");
      return;
    }
    if (d.step == Step::kPromoteMember && e.mentions("can only promote a learner member"))
      return;  // its host was first
    // Leadership handed over, the new leader's controller may remove the same member first.
    if (d.step == Step::kRemoveMember && d.leadership_to != 0 && e.mentions("member not found")) {
      record(action, d.reason, d.command, "already removed by the new leader's controller");
      return;
    }
    // etcd's strict reconfiguration check: it takes a change only once every member has been
    // connected for a while (and never one that would leave too few started members). Waiting.
    if (e.mentions("unhealthy cluster") || e.mentions("not enough started members")) {
      spdlog::info("auto: etcd refuses to {} for now ({}): trying again next round", action, e.what());
      return;
    }
    record(action, d.reason, d.command, std::string("failed: ") + e.what());
    throw;
  }
}

}  // namespace etcdadm

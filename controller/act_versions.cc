// etcd versions (controller/decide_versions.cc decides): the acting controller gives the version
// turn (a conditional write over the turn read); the turn's host changes its member through
// `etcdadm upgrade apply`'s phases. What the turn and etcd's version rules say is observed here too.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"
#include "common/failpoint.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/member_health.h"
#include "etcdadm/upgrade/upgrade.h"
#include "store/blob_capabilities.h"

namespace etcdadm {

using namespace controller_internal;

// The version turn is read only while a member runs another version than the spec's (or this
// host's own change is unfinished): an idle cluster costs the store nothing more. The acting
// controller also surveys the cluster against etcd's version rules then (plan_upgrade).
void Controller::observe_version_change(Observation& o) {
  turn_version_.clear();
  if (!o.spec || !o.cluster.answered) return;
  const bool behind = voters_behind(o.cluster.info, o.spec->etcd_version);
  if (!behind && !o.local.version_change) return;
  // Surveyed only when no change is under way: every member a healthy voter, a leader.
  const bool whole =
      o.cluster.info.leader_id != 0 && std::all_of(o.cluster.info.members.begin(), o.cluster.info.members.end(),
                                                   [](const MemberInfo& m) { return !m.learner && member_healthy(m); });
  if (auto turn = capability<ConditionalWrites>(*store_)->read_versioned(kAutoVersionTurnKey, 1 << 16)) {
    turn_version_ = turn->version;  // the next turn replaces it, whether it is taken or not
    std::string refused;
    try {
      refused = record_policy().refusal(kAutoVersionTurnKey, turn->contents);
      if (refused.empty()) o.version_turn = parse_version_turn(turn->contents, o.store_url + "/" + kAutoVersionTurnKey);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCorrupt) throw;
      o.record_problems.push_back(std::string(kAutoVersionTurnKey) + ": " + e.what());
      return;
    }
    if (!refused.empty()) refuse_record(refused);  // as if no turn were given: the acting controller gives one
  }
  MemberConfig recorded;
  if (behind && whole && is_acting(o) && load_member_state(member_.config_dir, recorded)) {
    o.version_plan = plan_upgrade(recorded, o.spec->etcd_version, other_members(o.hosts));
  }
}

// The acting controller names the member whose version changes next. Like a membership change,
// only while this member still leads, and only over the turn read (a conditional write): a
// controller deposed a moment ago, or one that read an older turn, writes nothing.
void Controller::give_version_turn(const Decision& d) {
  if (!still_leads(d)) return;
  auto& conditional = *capability<ConditionalWrites>(*store_);
  if (!conditional.write_if(kAutoVersionTurnKey, keyring_.sign(kAutoVersionTurnKey, version_turn_json(d.turn)),
                            turn_version_)) {
    spdlog::info("auto: the version turn changed while this host gave the next one: reading it again");
    return;
  }
  failpoint("auto/version/turn-given");
  record(step_name(d.step), d.reason, d.command, "done: turn " + std::to_string(d.turn.sequence));
}

// This host's turn: its member changes version through `etcdadm upgrade apply`'s phases (the
// whole cluster healthy and able to lose this member, etcd's version rules, a backup, the release
// installed beside the old one, leadership moved away, the switch, the health wait), each phase
// recorded in upgrade.json so that a controller killed part way finishes it when it comes back.
void Controller::change_version(const Decision& d, const Observation& o) {
  recorded_with(d, [&] {
    UpgradeOptions u;
    if (!load_member_state(member_.config_dir, u.member)) {
      throw Error(ErrorKind::kNotFound, "member " + member_.name + " has no state file in " + member_.config_dir);
    }
    u.release = options_.lifecycle.release;
    u.release.version = d.turn.to;
    u.endpoints = other_members(o.hosts);
    u.backup = [&](EtcdClient& cluster) { return backup_through(d, options_.pre_change_backup_age, cluster); };
    const UpgradeResult r = run_upgrade(u);
    return r.from + " -> " + r.to + " (" + version_step_name(r.kind) + ")" +
           (r.backup.empty() ? "" : ", backup " + r.backup);
  });
  store_view_.reset();
}

}  // namespace etcdadm

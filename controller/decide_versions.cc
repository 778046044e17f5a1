// etcd versions (rule V and the acting controller's version turn, controller/decide.cc): one
// member's version changes at a time, followers first and the leader's last, within etcd's rules.
#include <algorithm>

#include "common/text.h"
#include "controller/decide_concerns.h"

namespace etcdadm {

bool voters_behind(const ClusterInfo& info, const std::string& version) {
  const std::string target = decide_parts::version_text(version);
  return std::any_of(info.members.begin(), info.members.end(), [&](const MemberInfo& m) {
    return !m.learner && decide_parts::version_text(m.version) != target;
  });
}

namespace decide_parts {

std::optional<Decision> change_versions(const Observation& o) {
  const ClusterInfo& info = o.cluster.info;
  const std::string target = version_text(o.spec->etcd_version);
  if (!voters_behind(info, target)) return std::nullopt;
  // A CA rotation restarts members one at a time too: never beside a version change.
  if (o.ca_rotation && o.ca_rotation->completed_unix == 0) {
    return make(Step::kWait, "the spec asks for etcd " + target + ": the version change waits until CA rotation " +
                                 o.ca_rotation->id + " is completed (each restarts members; never both at once)");
  }
  if (o.version_turn) {
    const VersionTurn& t = *o.version_turn;
    const MemberInfo* holder = nullptr;
    for (const auto& m : info.members) {
      if (m.id == t.member_id) holder = &m;
    }
    if (holder != nullptr && (version_text(holder->version) != version_text(t.to) || !member_healthy(*holder))) {
      return make(Step::kIdle, "version change: turn " + std::to_string(t.sequence) + ", member " +
                                   member_label(*holder) + " on " + t.host + " from " + t.from + " to " + t.to +
                                   "; the next turn once it runs " + t.to + " and is healthy");
    }
  }
  if (!o.version_plan) {
    return make(Step::kWait, "members run another etcd version than the spec's " + target +
                                 ", but the cluster's versions could not be surveyed");
  }
  const UpgradePlan& plan = *o.version_plan;
  if (!plan.allowed) {
    std::string supported;
    for (const auto& e : plan.members) {
      if (!e.step.allowed && !e.step.supported_path.empty() &&
          supported.find(e.step.supported_path) == std::string::npos) {
        supported += (supported.empty() ? "" : "; ") + e.step.supported_path;
      }
    }
    return make(Step::kWait,
                "the spec asks for etcd " + target +
                    ", a change etcd does not allow from here: " + join_list(plan.problems) + "; nothing was stopped",
                (supported.empty() ? std::string() : supported + "; ") + "or put the spec back: etcdadm seed --store " +
                    o.store_url + " --version <the version the members run>");
  }
  // plan_upgrade's order: members done first, then the followers by name, the leader last.
  const UpgradePlanEntry* next = nullptr;
  for (const auto& e : plan.members) {
    if (next == nullptr && e.step.kind != VersionStepKind::kSame && !e.member.learner) next = &e;
  }
  if (next == nullptr) return std::nullopt;  // surveyed just as the last member finished
  const HostRecord* host = nullptr;
  for (const auto& h : o.hosts) {
    if (h.record.data == DataState::kMember &&
        (h.record.member_id == next->member.id ||
         h.record.peer_url == (next->member.peer_urls.empty() ? "" : next->member.peer_urls[0]))) {
      host = &h.record;
    }
  }
  const std::string command = "etcdadm upgrade apply --version " + target + " --store " + o.store_url;
  if (host == nullptr) {
    return make(Step::kWait,
                "member " + member_label(next->member) + " runs etcd " + next->member.version + ", the spec " + target +
                    ", and no registered host runs it: change it on its host",
                command + " (on the host of " + member_label(next->member) + ")");
  }
  Decision d = make(Step::kGiveVersionTurn,
                    "the spec asks for etcd " + target + " (" + version_step_name(next->step.kind) + "): member " +
                        member_label(next->member) + " on " + host->name + " goes next" +
                        (next->member.leader ? ", the leader's, last" : ", followers first, the leader's last"),
                    command + " (on " + host->name + ")");
  d.turn.sequence = (o.version_turn ? o.version_turn->sequence : 0) + 1;
  d.turn.host = host->name;
  d.turn.member_id = next->member.id;
  d.turn.from = version_text(next->member.version);
  d.turn.to = target;
  d.turn.written_by = o.self;
  d.turn.written_unix = o.now_unix;
  return d;
}

std::optional<Decision> change_own_version(const Observation& o, const MemberInfo* me) {
  if (o.local.data != DataState::kMember) return std::nullopt;
  const VersionTurn* turn = o.version_turn && o.version_turn->host == o.self && o.local.member_id != 0 &&
                                    o.version_turn->member_id == o.local.member_id
                                ? &*o.version_turn
                                : nullptr;
  const std::string command = turn ? "etcdadm upgrade apply --version " + turn->to + " --store " + o.store_url : "";
  if (o.local.version_change) {
    const InterruptedChange& c = *o.local.version_change;
    if (turn != nullptr && !c.rollback && version_text(c.to) == version_text(turn->to)) {
      Decision d = make(Step::kChangeVersion,
                        "version turn " + std::to_string(turn->sequence) + ": the change of this member from " +
                            c.from + " to " + c.to + " stopped part way: finishing it",
                        command);
      d.turn = *turn;
      return d;
    }
    // Stopped after the switch (the member runs the change's version), so the next turn may have
    // been given already: what is left only checks and records (the switch never restarts a
    // member that runs its target), so it is finished whoever's turn it is.
    if (!c.rollback && me != nullptr && me->reachable && version_text(me->version) == version_text(c.to)) {
      Decision d = make(Step::kChangeVersion,
                        "the change of this member from " + c.from + " to " + c.to +
                            " stopped after its switch: finishing its checks (no restart)",
                        "etcdadm upgrade apply --version " + c.to + " --store " + o.store_url);
      d.turn = turn != nullptr ? *turn : VersionTurn{};
      d.turn.to = c.to;
      return d;
    }
    return make(Step::kWait,
                "a " + std::string(c.rollback ? "rollback" : "change") + " of this member's etcd from " + c.from +
                    " to " + c.to +
                    " started outside the controllers' turns and has not finished; nothing else is done "
                    "on this host until it has",
                c.rollback ? "etcdadm upgrade rollback"
                           : "etcdadm upgrade apply --version " + c.to + " (or etcdadm upgrade rollback)");
  }
  // A new change starts only toward the spec's version: a turn of an earlier change written back
  // (a replay) would otherwise move the member back.
  if (turn != nullptr && o.local.etcd_running && me != nullptr && me->reachable && o.spec &&
      version_text(turn->to) == version_text(o.spec->etcd_version) &&
      version_text(me->version) != version_text(turn->to)) {
    Decision d = make(Step::kChangeVersion,
                      "version turn " + std::to_string(turn->sequence) + " names this host: member " + id_hex(me->id) +
                          " from " + me->version + " to " + turn->to +
                          " (a backup first; leadership moved away first when it leads)",
                      command);
    d.turn = *turn;
    return d;
  }
  return std::nullopt;
}

}  // namespace decide_parts
}  // namespace etcdadm

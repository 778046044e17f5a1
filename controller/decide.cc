// decide(): the rules one controller (`etcdadm auto`) follows, in the order it tries them. This
// file is their one source: docs/self-management.md ("Decisions") explains them and links here;
// each rule's logic is in the file of its concern (controller/decide_<concern>.cc).
//
//   0. another live host holds this host's name (its record, another host ID) -> wait, do nothing
//      at all: not even this host's record is written
//   1. paused                                -> wait (say who paused and why)
//   Q. a shared record cannot be read or asks for what the controllers never do (the store down,
//      a garbled spec, plan, pause, turn, CA rotation or command; memberCount outside 1-9, a
//      version that is no release)      -> this host's own etcd started when it is down (rule 5),
//                                          else wait naming the record; nothing else acts on it
//   U. this host's data dir is unavailable (not on its member's device, unreadable) -> wait: never
//      started, set aside or restored; the others count it as data that may exist
//   2. no spec                               -> wait (say the seed command)
//   O. this host runs a member no plan made (its local planSequence is 0), and the store holds no
//      plan and no created marker (a cluster made by hand, by kubeadm) -> wait for `etcdadm auto
//      adopt`; nothing is done with the member, not even a restart
//   R. the command queue (restore):
//      R1. a restore is queued and no plan restores it -> plan the restore (replace-if-match,
//          sequence + 1): the acting controller when a cluster answers (after a backup of it), any
//          host when none does
//      R2. a restore plan newer than this host's data -> restore this host's member from its backup
//          when the plan lists it, else set this host's old data aside
//      R3. this host's restored member has a leader and the command is still queued -> delete it
//   RQ. a recover-quorum plan newer than this host's data -> the listed host (the survivor furthest
//      along) makes its member a cluster of one (`etcdadm recover`); any other host with data
//      sets it aside (a spare, joined by the recovered member's controller)
//   3. total loss: the created marker is present, no member answers, no host holds a member's data
//                                            -> wait, say the restore commands (never an empty
//                                               cluster over a store that had one); with the spec's
//                                               autoRestore, once it lasted the delay, plan the
//                                               newest backup + its log to its end (once an hour)
//   4. this host's member was removed        -> forget it: stop it, set its data aside ("corrupt"
//                                               when found corrupt, else "removed")
//      this host's data is lost              -> wait to be replaced (never start on empty data),
//                                               or forget it once its member is gone
//   V. a version change of this host's member is its turn or stopped part way -> change/finish it;
//      one stopped part way that no turn covers -> wait (a person's `upgrade apply` to finish)
//   5. this host is a member and etcd is down -> start it (wait while etcd refused it on
//                                               inconsistent data, retried every 30 s)
//   6. a plan lists this host, its data is empty, and the cluster does not know this member as
//      started                               -> create this member from the plan
//   J. this host was added as a learner      -> join (the learner-joins rule)
//   7. this host's member has a leader, the created marker is missing and a plan made the cluster
//      (the store's, or the one its local planSequence names) or adopts it (this host's member in
//      the adopted cluster)                   -> write the marker
//   8. no marker, no plan, no member anywhere, enough live hosts (all the spec's, or a quorum for
//      longer than the settle window)        -> plan the cluster (conditional write: one plan);
//      no member answers                     -> wait for the plan's members, or a quorum back
//   L. the cluster answers but no member names a leader, for longer than several elections -> wait,
//      naming the voters that answer (with their revisions) and those that do not; after the
//      spec's replaceAfter: the quorum lost for good, reported (gauge, auto status) with the
//      change log's end and what a person runs (`etcdadm recover` on the survivor furthest along);
//      with the spec's recoverQuorum on and every voter that does not answer on a live host whose
//      record says it holds no data, the furthest survivor's host plans its recovery (rule RQ)
//   C. this host's certificates expire within the spec's window, every member healthy -> renew them;
//      a CA rotation this host holds the old CA of -> re-issue its leaves, then switch (the lease)
//   A. this host's member leads: the acting controller, one change at a time:
//      learners promoted; voters etcd refused on inconsistent data replaced when the others agree;
//      unhealthy voters removed (after replaceAfter, at once when one too many; never at the cost
//      of quorum); corrupt voters (HashKV differs from an agreeing majority) removed, a CORRUPT
//      alarm disarmed once replaced; NOSPACE recovered; a spare added / one too many removed; the
//      version turn given (followers first, the leader last, within etcd's rules); members due a
//      defrag defragmented; a CA rotation started or completed
//   otherwise                                -> idle, with what for
#include "common/text.h"
#include "common/timefmt.h"
#include "controller/decide_concerns.h"

namespace etcdadm {

const char* step_name(Step step) {
  switch (step) {
    case Step::kIdle:
      return "idle";
    case Step::kWait:
      return "wait";
    case Step::kStartLocalMember:
      return "start-member";
    case Step::kStartPlannedMember:
      return "create-member";
    case Step::kMarkCreated:
      return "mark-created";
    case Step::kPlanCluster:
      return "plan-cluster";
    case Step::kJoinAsAdded:
      return "join";
    case Step::kForgetMember:
      return "forget-member";
    case Step::kAddMember:
      return "add-member";
    case Step::kPromoteMember:
      return "promote-member";
    case Step::kRemoveMember:
      return "remove-member";
    case Step::kPlanRestore:
      return "plan-restore";
    case Step::kRestoreMember:
      return "restore-member";
    case Step::kSetAsideData:
      return "set-aside-data";
    case Step::kFinishRestore:
      return "finish-restore";
    case Step::kGiveVersionTurn:
      return "version-turn";
    case Step::kChangeVersion:
      return "change-version";
    case Step::kDefragment:
      return "defrag";
    case Step::kRecoverSpace:
      return "recover-space";
    case Step::kDisarmCorrupt:
      return "disarm-corrupt";
    case Step::kRenewCerts:
      return "renew-certs";
    case Step::kStartCaRotation:
      return "start-ca-rotation";
    case Step::kCaReissue:
      return "ca-reissue";
    case Step::kCaSwitch:
      return "ca-switch";
    case Step::kCompleteCaRotation:
      return "complete-ca-rotation";
    case Step::kPlanQuorumRecovery:
      return "plan-recover-quorum";
    case Step::kRecoverQuorum:
      return "recover-quorum";
  }
  return "?";
}

Decision decide(const Observation& o, const std::string& new_token) {
  using namespace decide_parts;
  if (!o.name_conflict.empty()) {
    return make(Step::kWait, o.name_conflict,
                "give this host its own --name, or stop the other etcdadm auto that runs as " + o.self);
  }
  if (o.pause) {
    std::string since =
        o.pause->since_unix > 0
            ? " since " + format_rfc3339_seconds(std::chrono::system_clock::from_time_t(o.pause->since_unix))
            : "";
    Decision d = make(Step::kWait,
                      "paused by " + o.pause->by + since +
                          (o.pause->reason.empty() ? "" : " (" + o.pause->reason + ")") + ": no controller acts",
                      "etcdadm auto resume --store " + o.store_url);
    d.waits_on_a_person = true;
    return d;
  }
  std::vector<std::string> problems = o.record_problems;
  if (o.spec) {
    if (std::string p = cluster_spec_problem(*o.spec); !p.empty())
      problems.push_back(std::string(kEtcdManagerClusterSpecKey) + ": " + p);
  }
  if (!problems.empty()) {
    // This host's member runs on its own data whatever the store says: restarting it is what its
    // init system would do, and it keeps the cluster's quorum. Nothing shared is acted on.
    if (auto start = start_stopped_member(o)) return *start;
    Decision d = unusable_records(o, problems);
    d.waits_on_a_person = true;
    return d;
  }
  if (o.local.data == DataState::kUnavailable) {
    // Its own data dir is looked at every round whatever the pace of the store's reads.
    Decision d =
        make(Step::kWait,
             "this host's data dir cannot be told apart from lost data: " + o.local.data_problem +
                 "; nothing is started, set aside or restored here, and the others count it as data that "
                 "may still exist",
             "mount the member's data volume (or fix the disk); if its data is gone for good, empty the data dir");
    d.waits_on_a_person = true;
    return d;
  }
  // Before the spec: adopt writes one from what runs, where seed would ask for a cluster of its own.
  if (auto foreign = not_adopted(o)) return *foreign;
  if (!o.spec) {
    return make(Step::kWait, "the store has no cluster spec (control/etcd-cluster-spec)",
                "etcdadm seed --store " + o.store_url + " --members 3 --version <etcd version>");
  }
  if (auto queued = run_queue(o, new_token)) return *queued;
  if (auto recovery = carry_out_quorum_recovery(o)) return *recovery;
  if (total_loss(o)) return after_total_loss(o, new_token);

  const MemberInfo* me = o.cluster.answered ? find_member_by_peer_url(o.cluster.info, o.self_peer_url) : nullptr;
  if (auto gone = forget_or_wait_for_replacement(o, me)) return *gone;
  if (auto version = change_own_version(o, me)) return *version;
  if (auto start = start_stopped_member(o)) return *start;
  if (auto create = start_planned_member(o, me)) return *create;
  if (auto join = join_as_added(o, me)) return *join;
  if (auto mark = mark_created(o)) return *mark;
  if (auto cluster = create_or_wait_for_cluster(o, new_token)) return *cluster;
  if (auto lost = lost_quorum(o, new_token)) return *lost;
  if (auto renew = renew_own_certs(o, me)) return *renew;
  if (auto rotation = rotate_own_ca(o)) return *rotation;
  // The controller beside the Raft leader acts for the cluster: etcd itself chose it, a minority
  // has no leader, so a host cut off from the majority never acts.
  if (is_acting(o)) return act_on_cluster(o);
  return idle(o, me);
}

}  // namespace etcdadm

// What one controller (`etcdadm auto`) does next, decided from what it observed: a pure function,
// so every rule is a unit test with known answers (test/unit/controller_decide_*_test.cc, one file
// a concern). The rules and their order: controller/decide.cc, their one source.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controller/ca_rotation.h"
#include "controller/records.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/maintenance/consistency.h"
#include "etcdadm/upgrade/upgrade.h"
#include "store/etcd_manager.h"

namespace etcdadm {

struct HostView {
  HostRecord record;
  bool live = false;  // its record changed lately (sequence seen moving, or a fresh heartbeat)
};

// The cluster as the members this host could reach describe it (cluster_info: MemberList, then
// every member's Status).
struct ClusterView {
  bool answered = false;  // some member answered MemberList
  ClusterInfo info;
};

// This host's own member, as its data dir and init system show it.
struct LocalView {
  DataState data = DataState::kEmpty;
  std::string cluster_token;  // of the plan or init its data came from
  bool etcd_running = false;
  bool has_leader = false;  // its Status names a leader
  // The member its data belongs to, as its Status last said (kept in <config-dir>/etcdadm-auto.json,
  // so it is known while etcd is down): 0 when never seen.
  uint64_t member_id = 0;
  uint64_t cluster_id = 0;
  // The sequence of the newest plan this host's data was made from or set aside for (0: none
  // recorded): a restore plan with a higher one is this host's to carry out, once.
  uint64_t plan_sequence = 0;
  // A change of its member's etcd version that started and has not finished (upgrade.json).
  std::optional<InterruptedChange> version_change;
  // When the first of its member certificates expires (and which), and its CA (0: none found).
  int64_t certs_expire_unix = 0;
  std::string first_expiring;
  int64_t ca_expires_unix = 0;
  // Why its etcd refused to start since its controller last started it (HostRecord::etcd_refused;
  // kept until the member answers with a leader), and how long ago that start was (-1: never).
  std::string etcd_refused;
  int64_t seconds_since_start = -1;
  std::string data_problem;  // DataState::kUnavailable: why
};

// A member etcd refused to start on inconsistent data is started again this often, never more (each
// try hashes its whole db and asks its peers): a peer's damage may have been the cause, and that
// peer may be replaced meanwhile.
inline constexpr int64_t kRefusedRestartSeconds = 30;

struct Observation {
  // The CA rotation record (etcdadm-auto/ca-rotation.json) when there is one, this host's place in
  // it (local_ca_rotation_state), and why its CA cannot be opened here ("" when it can or need not).
  std::optional<CaRotationRecord> ca_rotation;
  CaRotationState ca_rotation_state = CaRotationState::kOtherCa;
  std::string ca_rotation_problem;
  std::string self;  // this host's name
  std::string self_peer_url;
  std::string self_client_url;
  std::string ca_sha256;
  std::string store_url;
  std::optional<EtcdManagerClusterSpec> spec;
  AutoSpec auto_spec;
  std::optional<PauseRecord> pause;
  bool created_marker = false;
  std::optional<ClusterPlan> plan;
  // The oldest queued restoreBackup command (control/<dir>/_command.json).
  std::optional<EtcdManagerCommand> restore_command;
  // The SHA-256 of its backup's db that its approval binds ("" where unsigned records are accepted).
  std::string restore_db_sha256;
  // Its backup's revision as its metadata records it, read only while the quorum is lost and the
  // restore is not planned yet (none: not read, or not recorded): a survivor at or past it is the
  // restore's source instead (run_queue).
  std::optional<int64_t> restore_backup_revision;
  // The shared records this host cannot act on, each "<what>: <why>": the store that cannot be
  // read, a record that does not parse (the spec, the plan, the pause, the version turn, the CA
  // rotation, a queued command), a queued command outside what the controllers obey. decide()
  // adds a spec it cannot obey (cluster_spec_problem). While there is one, this host does its
  // local duties only (rule Q).
  std::vector<std::string> record_problems;
  // Another live host holds this host's name (Controller::name_held_elsewhere; "" when none): this
  // host does nothing at all, not even write its record (rule 0).
  std::string name_conflict;
  // Host records that do not parse, named: each may be a host that holds a member's data, so no
  // total loss is seen while there is one.
  std::vector<std::string> unreadable_host_records;
  // The member whose etcd version changes now (etcdadm-auto/version-turn.json), when there is one.
  std::optional<VersionTurn> version_turn;
  // etcd's version rules applied to the cluster as it is now, for the spec's version: surveyed
  // by the acting controller only, and only while a healthy voter runs another version.
  std::optional<UpgradePlan> version_plan;
  // When each member was last defragmented (read only while the spec has a defrag schedule), and
  // the members found corrupt (read too when this host's member was removed from its cluster).
  MaintenanceRecord maintenance;
  // The acting controller's comparison of the voters' HashKV this round (every
  // corrupt_check_seconds with every voter healthy, and at once under etcd's CORRUPT alarm).
  struct HashCheck {
    HashSurvey survey;
    HashVerdict verdict;
  };
  std::optional<HashCheck> hashes;
  // How long this controller has seen the total loss (rule 3; 0: not now), and, with the spec's
  // autoRestore on and the loss older than its delay, what an auto-restore would restore.
  int64_t total_loss_seconds = 0;
  // How long this controller has seen no member answer while the store says a cluster was created
  // (0: it answers, or it was never created).
  int64_t unanswered_seconds = 0;
  // How long this controller has seen a lost quorum (quorum_loss; 0: not now), and, once it lasted
  // the spec's replaceAfter, the last revision of the cluster's change log in the store (its
  // tagged segments; 0: none).
  int64_t quorum_lost_seconds = 0;
  int64_t quorum_loss_log_end = 0;
  // The hosts whose records were written again since this controller first read the store after
  // the quorum was lost (a sequence above the one it held then): only such a record speaks of its
  // host's data since; an older one may say "empty" of a member it made a moment before it died.
  std::set<std::string> rewritten_since_quorum_loss;
  // This controller has seen a member name a leader since the plan read was written (the plan's
  // cluster formed): a leaderless cluster is no longer a restore's members still electing.
  bool led_since_plan = false;
  struct AutoRestoreCandidate {
    std::string backup;
    std::string backup_db_sha256;  // as its metadata records it ("" when it records none)
    int64_t backup_revision = 0;
    int64_t to_revision = 0;  // the log's last revision; 0: no log (the snapshot alone)
    uint64_t bump = 0;        // sized_revision_bump (restore/restore_method.h)
    double revisions_per_second = 0;
    int64_t complete_until_unix = 0;  // the log known complete until then
    std::string problem;              // why there is nothing to restore ("" when there is)
    std::string passed_over;          // newer backups not taken, and why (unattested: "" when none)
    int64_t untagged_segments = 0;    // change log segments not taken (no or a forged tag)
  };
  std::optional<AutoRestoreCandidate> auto_restore;
  std::vector<HostView> hosts;  // this host's own record among them
  ClusterView cluster;
  LocalView local;
  int64_t now_unix = 0;
  // How long this controller has seen at least a quorum of live hosts without a plan (0: not now).
  int64_t quorum_seen_seconds = 0;
  // How long this controller has seen each member unhealthy, by ID, while it acted (its own
  // observation: a new acting controller starts counting afresh, which only delays a replacement).
  std::map<uint64_t, int64_t> unhealthy_seconds;
  // The unhealthy members (by ID) whose own host wrote its record again since they became
  // unhealthy: a sequence above the one the store held when this controller first read it after
  // that (a record written before, read late, is no word on the member's state now).
  std::set<uint64_t> rewritten_since_unhealthy;
  // How long this controller has seen each learner stay a learner, by ID, while it acted (the same).
  std::map<uint64_t, int64_t> learner_seconds;
  // Acting: how long ago this controller replaced (removed after the grace) the member at each peer
  // URL, for those within kReplaceDampSeconds: a host that fails again soon after is replaced only
  // after kReplaceDampFactor times the grace (a replacement costs a backup and a full resync, and
  // one that did not mend it will not the next time either).
  std::map<std::string, int64_t> replaced_seconds_ago;
  // How long this controller has known records written with another host's clock (-1: not known):
  // the plan (by sequence), the last NOSPACE recovery, each corrupt member. A hold or a retry cap
  // counts the smaller of the writer's age and this one (a writer whose clock is behind cannot cut
  // it short); a window that allows an action counts the larger (one ahead cannot stretch it).
  int64_t plan_seen_seconds = -1;
  // How long this controller has seen this host's member missing from its cluster's answer
  // (local_member_removed; 0: not now). Before etcd 3.6 a member answers MemberList from its own
  // state, which may lag: a removal counts once seen for kRemovalConfirmSeconds.
  int64_t removal_seen_seconds = 0;
  // While this host's member is down and a restore plan that lists it replaces a cluster
  // (ClusterPlan::replaces_cluster_id): a member of that cluster that answers with a leader (its
  // client URL), "" when none does. Its restored member does not start meanwhile.
  std::string replaced_cluster_leader;
  int64_t space_recovery_seen_seconds = -1;
  std::map<uint64_t, int64_t> corrupt_seen_seconds;
  // The largest difference seen between another live host's clock and this one's (its heartbeat
  // against this clock when its record was seen changing), in seconds.
  int64_t clock_skew_seconds = 0;
};

// A record's age by the writer's clock and by this host's own observation (`seen`, -1: none):
// the smaller (for a hold) or the larger (for a window that allows an action).
int64_t held_age(int64_t writer_age, int64_t seen);
int64_t window_age(int64_t writer_age, int64_t seen);

enum class Step {
  kIdle,                // nothing to do; `reason` says what the controller waits for
  kWait,                // something needs a person or another host; `reason` says what
  kStartLocalMember,    // start this host's etcd through its init system
  kStartPlannedMember,  // create this host's member from `plan` (init with the plan's initial cluster)
  kMarkCreated,         // write etcd-manager's etcd-cluster-created marker (if absent)
  kPlanCluster,         // write `plan` with a conditional write (absent -> plan)
  kJoinAsAdded,         // this host was added to the cluster: start its member (join's phases)
  kForgetMember,        // this host's member is no longer in the cluster: stop it, set its data aside
  kAddMember,           // acting: add `host` as a learner (its controller then joins)
  kPromoteMember,       // acting: promote learner `member_id` (etcd refuses until it caught up)
  kRemoveMember,        // acting: remove `member_id` (a dead member replaced, or one too many)
  kPlanRestore,         // write `plan` (purpose restore) replacing the plan read, for the queued command
  kRestoreMember,       // stop this host's etcd, set its data aside, restore its member from `plan`
  kSetAsideData,        // a restore plan leaves this host out: stop its etcd, set its old data aside
  kFinishRestore,       // the restored cluster has a leader: delete the command `plan.command_key`
  kGiveVersionTurn,     // acting: write `turn` (replace-if-match): that member's version changes next
  kChangeVersion,       // this host's turn: change its member to `turn.to` (upgrade apply's phases)
  kDefragment,          // acting: defragment `members`, one at a time in that order, a backup first
  kRecoverSpace,        // acting: NOSPACE: a backup, compaction, every member defragmented, disarm
  kDisarmCorrupt,       // acting: the corrupt member was replaced and every voter agrees: disarm CORRUPT
  kRenewCerts,          // this host's member certificates expire within the spec's window: renew them
  kStartCaRotation,     // acting: the CA expires within the spec's window: write a new rotation (create-if-absent)
  kCaReissue,           // this host's leaves are re-issued by the rotation's new CA (no restart)
  kCaSwitch,            // every member's host re-issued: this host takes the new CA, etcd restarts on it (the lease)
  kCompleteCaRotation,  // acting: every member's host switched: the rotation is marked completed
  kPlanQuorumRecovery,  // the furthest survivor's host: write `plan` (purpose recover-quorum, replace-if-match)
  kRecoverQuorum,       // the plan lists this host: its member becomes a cluster of one (etcdadm recover)
};
const char* step_name(Step step);

struct Decision {
  Step step = Step::kIdle;
  std::string reason;
  std::string command;  // the etcdadm command a person would run for the same effect ("" for none)
  // kStartPlannedMember, kPlanCluster, kPlanRestore, kRestoreMember, kSetAsideData, kFinishRestore,
  // kPlanQuorumRecovery, kRecoverQuorum
  ClusterPlan plan;
  // kPlanRestore, kFinishRestore: the command's cluster spec, written as the store's when it differs
  // (etcd-manager restores into the spec its command carries).
  std::optional<EtcdManagerClusterSpec> new_spec;
  // kRemoveMember of an unhealthy voter after the grace: its peer URL (Observation::replaced_seconds_ago).
  std::string replaced_peer_url;
  HostRecord host;         // kAddMember
  uint64_t member_id = 0;  // kPromoteMember, kRemoveMember; kJoinAsAdded: the learner this host becomes
  // kRemoveMember of the leader itself (a shrink): the voter its leadership is handed to first.
  uint64_t leadership_to = 0;
  std::string join_endpoint;  // kJoinAsAdded: a healthy member's client URL
  VersionTurn turn;           // kGiveVersionTurn, kChangeVersion
  std::vector<uint64_t>
      members;  // kDefragment: in defrag order (learners, followers, the leader); kDisarmCorrupt: the alarms' members
  // kRemoveMember of a member found corrupt: recorded (maintenance.json) before the removal.
  std::optional<CorruptMember> corrupt;
  // kForgetMember: why its data is set aside (kNone: there is none to keep, a lost member's).
  SetAside set_aside = SetAside::kNone;
  // kIdle: the cluster is as the spec says and nothing is under way, so the store is read only
  // every idle interval.
  bool settled = false;
  bool total_loss = false;   // kWait: the total loss (its own gauge)
  bool quorum_lost = false;  // kWait: a quorum lost for good (its own gauge)
  // The next round comes after kHurriedRound, not the interval (hurried_round()).
  bool hurry = false;
  // kWait for what only a person does (a resume, a record fixed, a volume mounted): the store is
  // read every idle interval meanwhile, as when settled, not every round (a paused cluster's hosts
  // made twelve times their idle requests; bench/auto_bench.sh roles).
  bool waits_on_a_person = false;
};

// quorum of n voters: n / 2 + 1.
int quorum_of(int members);

// The live host that runs member `member_id` and says etcd refused to start it on data that differs
// from a peer's (HostRecord::etcd_refused), or null.
const HostView* host_refusing_member(const Observation& o, uint64_t member_id);

// Whether this host's controller acts for the cluster: the cluster answered and names this host's
// member, which runs on this host's data, its leader (etcd chose it; a minority has no leader).
bool is_acting(const Observation& o);

// Rule 3's total loss: the store says a cluster was created, no member answers, and no host (this
// one included) holds a member's data.
bool total_loss(const Observation& o);

// Rule L's lost quorum: the store says a cluster was created and the cluster answers, but no member
// this host reaches names a leader. Its voters that answer (the survivors, furthest along first)
// and those that do not; nullopt when the cluster has a leader, or no voter answers.
struct QuorumLoss {
  struct Survivor {
    std::string member;  // its name (its ID in hex when it has none yet)
    std::string host;    // the host whose record names its peer URL ("" when none does)
    uint64_t id = 0;
    int64_t revision = 0;  // as its Status says
  };
  std::vector<Survivor> survivors;
  std::vector<std::string> unreachable;
};
std::optional<QuorumLoss> quorum_loss(const Observation& o);
// A leaderless cluster is taken for a lost quorum once this controller has seen it so for this long:
// several elections (etcd's default election timeout is 1 s), so that an election or a leader's
// restart is never reported as one.
inline constexpr int64_t kQuorumLostAfterSeconds = 10;

// An auto-restore is planned at most once in this long (a restore that failed waits for a person).
inline constexpr int64_t kAutoRestoreRetrySeconds = 3600;

// Whether the next round should come after kHurriedRound rather than the interval: with the
// spec's autoRestore on, while a created cluster does not answer, for at most its delay plus
// kHurrySeconds (a total loss is found through every host's record, each written a round after its
// host saw its data gone, and the delay is counted by rounds), and while a restore plan younger than
// kHurrySeconds is carried out and its cluster does not answer yet (each listed host starts its
// part in the round after it reads the plan). Those are the rounds a lost cluster's time back is
// made of; bounded, so that a cluster down for good costs the store the normal pace again.
bool hurried_round(const Observation& o);
inline constexpr std::chrono::milliseconds kHurriedRound{500};
inline constexpr int64_t kHurrySeconds = 60;

// Whether the cluster this host's data belongs to answers and no longer lists this host's member
// (by its ID when known: a learner added again at the same peer URL is another member): it was
// removed (replaced, found corrupt, or one too many). Only that cluster's word counts.
bool local_member_removed(const Observation& o);

inline constexpr int64_t kRemovalConfirmSeconds = 3;

// Observation::replaced_seconds_ago: a member at a peer URL replaced less than this long ago is
// replaced again only after kReplaceDampFactor times the spec's grace.
inline constexpr int64_t kReplaceDampSeconds = 3600;
inline constexpr int64_t kReplaceDampFactor = 4;

// Whether a voter runs another etcd version than `version` (or does not say which it runs).
bool voters_behind(const ClusterInfo& info, const std::string& version);

// Why a NOSPACE recovery is held back now: the last one (`record`) could not get under the quota
// with the spec's margin less than kSpaceRetrySeconds ago; nullopt when it may run.
// `seen_seconds`: how long this host has known that recovery (Observation::space_recovery_seen_seconds).
std::optional<std::string> space_recovery_held(const MaintenanceRecord& record, const AutoSpec& spec, int64_t now_unix,
                                               int64_t seen_seconds);

// The next step for this host. `new_token` is used as a new plan's cluster token.
Decision decide(const Observation& o, const std::string& new_token);

}  // namespace etcdadm

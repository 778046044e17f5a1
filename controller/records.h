// The records through which the controllers (`etcdadm auto`) of one cluster meet in its backup
// store, beside etcd-manager's control files (store/etcd_manager.h), all under etcdadm-auto/:
//
//   etcdadm-auto/spec.json          AutoSpec: what etcd-manager's spec has no field for, and a signed copy
//                                   of that spec (written by `etcdadm seed`)
//   etcdadm-auto/hosts/<name>.json  HostRecord: a host that runs `etcdadm auto`, written by it alone
//   etcdadm-auto/plan.json          ClusterPlan: the members a new cluster starts with; written only
//                                   by a conditional write, so two hosts can never plan two clusters
//   etcdadm-auto/pause.json         PauseRecord: present = no controller acts (`etcdadm auto pause`)
//   etcdadm-auto/version-turn.json  VersionTurn: the one member whose etcd version changes now;
//                                   written only by the acting controller, by a conditional write
//   etcdadm-auto/maintenance.json   MaintenanceRecord: when each member was last defragmented (and
//                                   what it gained); written by the acting controller
//   etcdadm-auto/ca-rotation.json  CaRotationRecord: the cluster CA being replaced (its new CA sealed
//                                   for the holders of the current one); create-if-absent
//   etcdadm-auto/approvals/<dir>.json
//                                   RestoreApproval: a person's approval of the restore command
//                                   control/<dir>/_command.json (written with the CA key)
//   etcdadm-auto/events/<time>-<host>.json
//                                   AutoEvent: one action taken or refused, with its reason
//
// docs/self-management.md is the protocol (versioned, for other tools); every reader treats these
// files as hostile input (kCorrupt naming the key), like everything else in a store. The records
// that make a controller act carry an authenticator only holders of the cluster CA's key can make
// (controller/record_auth.h); which ones, and what a reader does without it: docs/security.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controller/record_auth.h"
#include "store/blob_store.h"
#include "store/etcd_manager.h"

namespace etcdadm {

inline constexpr const char* kAutoDir = "etcdadm-auto";
inline constexpr const char* kAutoSpecKey = "etcdadm-auto/spec.json";
inline constexpr const char* kAutoHostsPrefix = "etcdadm-auto/hosts/";
inline constexpr const char* kAutoPlanKey = "etcdadm-auto/plan.json";
inline constexpr const char* kAutoPauseKey = "etcdadm-auto/pause.json";
inline constexpr const char* kAutoVersionTurnKey = "etcdadm-auto/version-turn.json";
inline constexpr const char* kAutoEventsPrefix = "etcdadm-auto/events/";
inline constexpr const char* kAutoMaintenanceKey = "etcdadm-auto/maintenance.json";
inline constexpr const char* kAutoCaRotationKey = "etcdadm-auto/ca-rotation.json";
inline constexpr const char* kAutoApprovalsPrefix = "etcdadm-auto/approvals/";
// Where conditional_writes() tries the store's conditions (one key per host: probes never collide).
std::string auto_probe_key(const std::string& host);

// ---- what the controllers obey of etcd-manager's spec (control/etcd-cluster-spec) ----
// The most members a spec, a plan or a restore command may ask for (etcd advises at most 7).
inline constexpr int kMaxClusterMembers = 9;
// An etcd release as the controllers install and run it: "3.5.17" or "v3.5.17"; not "3.5" (which
// etcd-manager-ctl configure-cluster stores as given), not "latest", not a pre-release.
bool is_etcd_release(const std::string& version);
// Why the controllers cannot obey `spec` ("" when they can): a member count outside 1-9, or a
// version that is no release. A spec like that is reported and never acted on, whoever wrote it.
std::string cluster_spec_problem(const EtcdManagerClusterSpec& spec);
// The failed members a cluster of `members` voters survives: (members - 1) / 2.
int fault_tolerance(int members);

// What the controllers obey beyond etcd-manager's {memberCount, etcdVersion}.
struct AutoSpec {
  // A member unhealthy this long is replaced (never when its removal would cost quorum).
  int64_t replace_after_seconds = 600;
  // With at least a quorum of the spec's members registered but not all, a new cluster is planned
  // once this long has passed since quorum was first seen, so that hosts starting a little apart
  // all become initial members instead of joining one by one.
  int64_t bootstrap_settle_seconds = 30;
  // A member is defragmented (one at a time, the leader last: etcdadm/maintenance/defrag.h) when at
  // least this share of its db file is free and at least `defrag_min_free_bytes` are; 0: never
  // for that reason.
  int defrag_free_percent = 50;
  int64_t defrag_min_free_bytes = int64_t{100} << 20;
  // And on this schedule (backup/schedule.h syntax; "": none), every member whose last defrag is
  // older than the schedule's last run.
  std::string defrag_schedule;
  // On etcd's NOSPACE alarm the acting controller recovers (etcdadm/maintenance/space.h): compaction
  // keeps this many revisions below the current one (and never passes a running change log).
  int64_t nospace_keep_revisions = 1000;
  // ... and disarms the alarm only when every member's file is then under this share of its quota.
  int nospace_disarm_below_percent = 90;
  // The acting controller compares every voter's HashKV this often (etcdadm/maintenance/
  // consistency.h) and replaces a member whose data differs from a majority that agrees; 0:
  // never (etcd's own CORRUPT alarm still has the voters compared at once).
  int64_t corrupt_check_seconds = 300;
  // Opt-in recovery from a total loss (off by default): once no member has answered and no host
  // has reported a member's data for this long, the hosts restore the newest backup and its change
  // log to its end, all at once, without a person. Off, they wait and name the commands.
  bool auto_restore = false;
  int64_t auto_restore_delay_seconds = 300;
  // Opt-in recovery from a lost quorum (off by default): once the cluster has answered without a
  // leader for replace_after_seconds, and every voter that does not answer is known to hold no data
  // (its host's live record says so), the survivor furthest along becomes a cluster of one
  // (`etcdadm recover`) and the other hosts join it. Off, they wait and name the commands.
  bool recover_quorum = false;
  // Each host renews its member's certificates (server, peer, the two client ones) once the first
  // of them expires within this long, one host at a time (the maintenance lease), with every
  // member healthy; etcd reads them on its next handshake, so nothing restarts. 0: never.
  int64_t cert_renew_before_seconds = 30 * 24 * 3600;
  // ... and warns (log, metric, auto status) once the CA expires within this long.
  int64_t ca_warn_before_seconds = 90 * 24 * 3600;
  // ... and the acting controller starts the CA's rotation (CaRotationRecord) once it expires within
  // this long, every member healthy on one CA. Clients that trust only the old CA (a
  // kube-apiserver loads its --etcd-cafile once) keep verifying the members through the cross
  // certificate, and the members keep accepting client certificates the old CA issued, until the
  // old CA expires: this long is the time such a client has to be restarted on the new CA. A
  // year: a Kubernetes control plane restarts its API servers at least as often as its own
  // certificates (one year, kubeadm's) are renewed. 0: never (a person runs `etcdadm auto rotate-ca`).
  int64_t ca_rotate_before_seconds = 365 * 24 * 3600;
  // A step that restarts a member (the CA switch) where the others cannot keep quorum meanwhile
  // (a cluster of 1 or 2): writes stop for the seconds of the restart. Off: the step waits for a
  // person to turn this on.
  bool restart_without_quorum = false;
  // +1 on every `etcdadm seed`: a controller never obeys a spec of a lower generation than one it or
  // any host saw (an old signed spec written back by a store writer is a replay).
  uint64_t generation = 0;
  // The etcd-manager spec (control/etcd-cluster-spec) `etcdadm seed` wrote beside this one, under
  // this record's authenticator: the controllers obey that file only while it says the same
  // (etcd-manager's format has no room for an authenticator). Absent in specs of an etcdadm that
  // did not sign them.
  std::optional<EtcdManagerClusterSpec> cluster_spec;
  bool operator==(const AutoSpec&) const = default;
};
// The longest certificate window a spec may give: ten years.
inline constexpr int64_t kCertWindowMaxSeconds = int64_t{10} * 366 * 24 * 3600;
// The longest corrupt-check interval a spec may give: a week.
inline constexpr int64_t kCorruptCheckMaxSeconds = 7 * 24 * 3600;
std::string auto_spec_json(const AutoSpec& spec);
AutoSpec parse_auto_spec(const std::string& json, const std::string& where);
// Why the controllers do not obey the etcd-manager spec `spec` ("" when they do): unless unsigned
// records are accepted, it must equal the copy in `signed_spec` (etcdadm-auto/spec.json, read
// through the record policy: present only when authentic), whose generation must be at least
// `highest_generation` (the highest any host obeyed).
std::string spec_authority_problem(const EtcdManagerClusterSpec& spec, const std::optional<AutoSpec>& signed_spec,
                                   bool accept_unsigned, uint64_t highest_generation);

// A host's own record, rewritten by it on every heartbeat.
// HostRecord::etcd_refused: etcd's initial corruption check refused to start the member.
inline constexpr const char* kEtcdRefusedInconsistent = "data-inconsistency";

// What a host's data dir holds: nothing yet; a member's data (of the cluster whose initial token
// is HostRecord::cluster_token); nothing any more although it held a member's (lost: it waits
// to be replaced, never started on empty data); or what cannot be told (unavailable: the dir is
// not on the device its member's data was on, unmounted or mounted late, or reading it fails):
// counted as data that may still exist, never started, never planned over. In records: "empty",
// "member", "lost", "unavailable" (added to protocol 1).
enum class DataState { kEmpty, kMember, kLost, kUnavailable };
const char* data_state_name(DataState state);
std::optional<DataState> parse_data_state(const std::string& name);

// Why a host sets its member's data aside when it forgets the member (the label's prefix in the
// set-aside directory's name): none (there is no data to keep), "corrupt" (found corrupt: kept for
// a person), "removed" (removed from the cluster: only the newest such data kept).
enum class SetAside { kNone, kCorrupt, kRemoved };
const char* set_aside_name(SetAside kind);

struct HostRecord {
  std::string name;  // the member name it runs as (DNS-safe, MemberConfig::complete)
  // Who holds the name: 32 hex digits made once per host (its config dir's etcdadm-auto.json). A
  // second host started under the same name finds another ID in a live record and is refused;
  // "" in records written before it existed (claimed by the first host that writes the name).
  std::string host_id;
  std::string peer_url;    // https://<bind>:<peer-port>
  std::string client_url;  // https://<bind>:<client-port>
  std::string ca_sha256;   // of the cluster CA certificate it holds: a host with another CA never joins
  std::string etcdadm_version;
  int64_t heartbeat_unix = 0;  // its clock (a hint: liveness is judged by `sequence` changing too)
  uint64_t sequence = 0;       // +1 on every write, so a reader sees it alive whatever the clocks say
  DataState data = DataState::kEmpty;
  std::string cluster_token;
  uint64_t member_id = 0;  // its member's ID when it runs one
  bool etcd_running = false;
  // Its member answered its own Status with a leader this round: a second view of the member's
  // health, beside the acting controller's (a member the leader cannot reach while it is in its
  // cluster is a partial partition, not a dead member).
  bool has_leader = false;
  std::string waiting_for;  // what its controller waits for, "" when nothing
  // When the first of its member's certificates expires, and its CA (unix seconds; 0: unknown).
  int64_t certs_expire_unix = 0;
  int64_t ca_expires_unix = 0;
  // Its part of the CA rotation `ca_rotation_id` (CaRotationRecord): "reissued" (its leaves are the
  // new CA's), "switched" (its CA is the new one, its etcd restarted on it); "" none.
  std::string ca_rotation_id;
  std::string ca_rotation_step;
  // Why its etcd refused to start, as etcd said it, since its controller last started it:
  // "data-inconsistency" (etcd's initial corruption check found its HashKV differs from a peer's);
  // "" none. About member `member_id`.
  std::string etcd_refused;
  // The highest spec generation (AutoSpec::generation) its controller obeyed: a host started
  // afresh learns from the others' records which older specs are replays.
  uint64_t spec_generation = 0;
  bool operator==(const HostRecord&) const = default;
};
std::string host_record_json(const HostRecord& host);
HostRecord parse_host_record(const std::string& json, const std::string& where);
std::string host_record_key(const std::string& name);
// A fresh host ID (HostRecord::host_id), and whether `id` is one (32 lowercase hex digits).
std::string new_host_id();
bool is_host_id(const std::string& id);

struct PlannedMember {
  std::string name;
  std::string peer_url;
  std::string client_url;
  bool operator==(const PlannedMember&) const = default;
};

// The members a new cluster starts with, all at once (etcd's static bootstrap). Each listed host
// starts its member from it; the one that first sees a leader writes etcd-manager's
// etcd-cluster-created marker. `sequence` is the plan's fencing token: a plan replaces another only
// through a conditional write against the version it read, with a higher sequence, and a host
// never acts on a plan with a lower sequence than one it acted on before.
//
// purpose "create": a new, empty cluster (sequence 1, written create-if-absent). purpose
// "restore": the cluster is replaced by one restored from `backup` on every listed host at once,
// as the queued etcd-manager command `command_key` asks; written by replace-if-match against the
// plan read, with the sequence one higher, so two hosts can never plan two restores. purpose
// "adopt": a running cluster described as it runs (sequence 1, create-if-absent, like "create").
struct ClusterPlan {
  uint64_t sequence = 1;
  std::string purpose = "create";
  std::string backup;  // "restore": the backup every member restores
  // "restore" (and "recover-quorum" planned for a queued restore whose backup the survivor is
  // further along than): control/<dir>/_command.json, deleted once the cluster is back.
  std::string command_key;
  // "restore": the bump every member's restore gives a keyspace with Kubernetes' keys
  // (restore/restore_method.h), the same on every host; 0 (a plan without the field, written before
  // it existed) restores every keyspace at its own revision, as those plans' hosts did.
  uint64_t kubernetes_revision_bump = 0;
  // "auto-restore" (a total loss, the spec's autoRestore on: no command): the backup's change log
  // replayed to exactly this revision on every host (0: the snapshot alone, it had no log).
  int64_t to_revision = 0;
  // "restore" and "auto-restore": every listed host restores `backup`.
  bool restores() const { return purpose == "restore" || purpose == "auto-restore"; }
  // "recover-quorum" (a lost quorum, the spec's recoverQuorum on, or a restore queued meanwhile
  // whose backup is behind the survivor): the one listed host's member,
  // `recovers_member_id` of cluster `replaces_cluster_id`, the survivor furthest along (at
  // `survivor_revision` when planned), becomes a cluster of one (`etcdadm recover`, with the change
  // log when it reaches further); every other host with data sets it aside and joins as a spare.
  uint64_t recovers_member_id = 0;
  int64_t survivor_revision = 0;
  // "restore" and "auto-restore": the ID of the cluster the plan replaces, as its planner saw it
  // answer (0: none answered). A listed host starts its restored member only while no member of
  // that cluster answers with a leader, so that two clusters never serve at once (the hosts of the
  // old cluster's voters that the plan leaves out stop theirs, unless their controllers are down).
  uint64_t replaces_cluster_id = 0;
  // "adopt" (`etcdadm auto adopt`: a running cluster the controllers did not create, handed to them
  // in place): the ID of that cluster. Its members are the cluster's voters as they ran; nobody
  // starts, restores or sets aside anything for it, and a host marks the cluster created only
  // while its own member belongs to this cluster.
  uint64_t adopts_cluster_id = 0;
  // "restore" and "auto-restore": the SHA-256 of the backup's db every listed host must fetch (the
  // approval's for a restore command, the backup metadata's as the planner read it for an
  // auto-restore; "" in plans written before it existed: the metadata's, as those hosts did).
  std::string backup_db_sha256;
  std::string cluster_token;  // --initial-cluster-token, unique per plan
  std::string etcd_version;
  std::string ca_sha256;
  std::vector<PlannedMember> members;
  std::string written_by;
  int64_t written_unix = 0;
  // "name1=peer1,name2=peer2": etcd's --initial-cluster.
  std::string initial_cluster() const;
  const PlannedMember* member(const std::string& name) const;
  bool operator==(const ClusterPlan&) const = default;
};
std::string cluster_plan_json(const ClusterPlan& plan);
ClusterPlan parse_cluster_plan(const std::string& json, const std::string& where);

// A rolling version change goes one member at a time: the acting controller (the Raft leader's)
// names the member whose turn it is, its host's controller changes it (`etcdadm upgrade apply`'s
// phases, a backup first), and the next turn is given only once that member runs `to` and is
// healthy. Followers go first, the leader's host last. `sequence` is +1 per turn, and the record
// is replaced only by a conditional write against the version read, so two controllers that both
// believe they act (a leader deposed a moment ago) can never give two turns at once.
struct VersionTurn {
  uint64_t sequence = 1;
  std::string host;        // whose controller changes its member
  uint64_t member_id = 0;  // that member, as etcd knows it (a turn for a member since replaced is void)
  std::string from;        // what it ran when the turn was given
  std::string to;          // what it is to run (the spec's version then)
  std::string written_by;
  int64_t written_unix = 0;
  bool operator==(const VersionTurn&) const = default;
};
std::string version_turn_json(const VersionTurn& turn);
VersionTurn parse_version_turn(const std::string& json, const std::string& where);

// What the acting controllers did to maintain the members, so that a schedule neither repeats nor
// skips a member when the acting controller changes. Written by the acting controller alone,
// read-modify-write without a condition: a lost update costs one member one more defrag.
struct MemberDefrag {
  int64_t unix = 0;  // when it finished
  int64_t db_size_before = 0, db_size_after = 0;
  int64_t stalled_ms = 0;
  bool operator==(const MemberDefrag&) const = default;
};
// The last recovery from NOSPACE: what it found and did. One that could not get under the quota is
// not tried again with the same margin for kSpaceRetrySeconds, whichever controller acts.
struct SpaceRecoveryRecord {
  int64_t unix = 0;
  std::string host;            // whose controller ran it
  int64_t keep_revisions = 0;  // the margin it kept (the spec's then)
  int64_t revision = 0, compacted_to = 0;
  int64_t largest_db_before = 0, largest_db_after = 0, quota = 0;
  bool disarmed = false;
  std::string note;  // the compaction's reasoning, or why the alarm stayed armed
  bool operator==(const SpaceRecoveryRecord&) const = default;
};
inline constexpr int64_t kSpaceRetrySeconds = 600;
// The maintenance under way: a controller writes it (a conditional write over the record it read)
// before a defrag or a NOSPACE recovery and removes it after, so that a controller that starts
// acting meanwhile (the leadership moves away from the acting member before its own defrag)
// does not run a second one beside it. A lease older than kMaintenanceLeaseSeconds is void (its
// writer died).
struct MaintenanceLease {
  std::string step;  // "defrag", "recover-space"
  std::string host;
  int64_t since_unix = 0;
  bool operator==(const MaintenanceLease&) const = default;
};
inline constexpr int64_t kMaintenanceLeaseSeconds = 900;
// A member the acting controller found corrupt (its HashKV differed from a majority that agreed)
// and removed to be replaced: written before the removal, so that its host's controller sets the
// member's data aside for a person instead of deleting it.
struct CorruptMember {
  int64_t unix = 0;
  std::string host;  // whose controller found it
  int64_t revision = 0;
  uint32_t hash = 0, majority_hash = 0;
  // Found by etcd's own initial check, which kept it from starting (its hash is then unknown: 0);
  // the others agreed on `majority_hash` at `revision`.
  bool refused_to_start = false;
  // Set once a CORRUPT alarm was disarmed on the strength of this replacement: one replacement
  // never excuses a later alarm.
  bool alarm_settled = false;
  bool operator==(const CorruptMember&) const = default;
};
// A CORRUPT alarm is disarmed after a replacement recorded at most this long before.
inline constexpr int64_t kCorruptDisarmWindowSeconds = 3600;
struct MaintenanceRecord {
  std::map<uint64_t, MemberDefrag> defrags;   // by member ID
  std::map<uint64_t, CorruptMember> corrupt;  // by member ID
  std::optional<SpaceRecoveryRecord> last_space_recovery;
  std::optional<MaintenanceLease> in_progress;
  uint64_t sequence = 0;  // +1 on every write (two writes never have the same bytes: conditional writes)
  bool operator==(const MaintenanceRecord&) const = default;
};
std::string maintenance_record_json(const MaintenanceRecord& record);
MaintenanceRecord parse_maintenance_record(const std::string& json, const std::string& where);

// A rotation of the cluster CA (docs/self-management.md, "CA rotation"). The new CA's key, its
// certificate and the cross certificate (its subject and key issued by the current CA) travel
// sealed (seal_for_ca_holders) under the current CA's key, with the record's id and both
// fingerprints as the context: only a host that holds the current CA can open it, and no store
// can forge or alter one. Every host then (1) re-issues its leaves by the new CA, each served with
// the cross certificate (no restart: etcd reads them on its next handshake; whoever trusts only the
// current CA still verifies them), and (2) once every member's host has, takes the new CA as its
// own and restarts its etcd on it, one host at a time (the maintenance lease), every member
// healthy: the old CA is no longer trusted. Written create-if-absent (or over a completed one, by a
// conditional write), so two rotations never run at once; `completed_unix` is set by the acting
// controller once every member's host switched.
struct CaRotationRecord {
  std::string id;                            // UTC yyyymmddThhmmssZ: the retired CA is kept as ca.retired-<id>.crt/key
  std::string old_ca_sha256, new_ca_sha256;  // SHA-256 of the ca.crt files (ca_fingerprint)
  std::string sealed;                        // base64 of seal_for_ca_holders(...)
  std::string started_by;                    // host or user@host
  int64_t started_unix = 0;
  std::string reason;
  int64_t completed_unix = 0;
  // What the sealed text is bound to.
  std::string seal_context() const;
  bool operator==(const CaRotationRecord&) const = default;
};
std::string ca_rotation_json(const CaRotationRecord& record);
CaRotationRecord parse_ca_rotation(const std::string& json, const std::string& where);

// A person's approval of one queued restore command (control/<dir>/_command.json, etcd-manager's
// format, which has no room for an authenticator): the controllers carry out a restore command only
// with an approval of its key, backup and target spec signed by the cluster's CA
// (etcdadm-auto/approvals/<dir>.json; written by `etcdadm etcd-manager restore-backup` or `etcdadm
// auto approve-restore` where the CA key is), so a store writer cannot queue a restore that runs.
struct RestoreApproval {
  std::string command_key;
  std::string backup;
  // The SHA-256 of the backup's db as the approver verified it (or, for an encrypted backup the
  // approver holds no key of, as its metadata records it): the restoring hosts restore exactly
  // those bytes, so a backup replaced in the store after its approval is refused.
  std::string backup_db_sha256;
  EtcdManagerClusterSpec into;
  std::string approved_by;  // user@host
  int64_t approved_unix = 0;
  bool operator==(const RestoreApproval&) const = default;
};
std::string restore_approval_json(const RestoreApproval& approval);
RestoreApproval parse_restore_approval(const std::string& json, const std::string& where);
// etcdadm-auto/approvals/<dir>.json for control/<dir>/_command.json.
std::string restore_approval_key(const std::string& command_key);
// Why `approval` does not approve `command` ("" when it does): none, one of another command, backup
// or target spec, or one that binds no backup digest.
std::string restore_approval_problem(const EtcdManagerCommand& command, const std::optional<RestoreApproval>& approval);

struct PauseRecord {
  std::string by;      // user@host
  std::string reason;  // "" when none given
  int64_t since_unix = 0;
};
std::string pause_record_json(const PauseRecord& pause);
PauseRecord parse_pause_record(const std::string& json, const std::string& where);

// One action a controller took, or found unsafe and left to a person.
struct AutoEvent {
  int64_t time_micros = 0;
  std::string host;
  std::string action;   // "plan-cluster", "start-member", "mark-created", "wait", ...
  std::string reason;   // why (or why not)
  std::string command;  // the etcdadm command line a person would run for the same effect
  std::string outcome;  // "done", "failed: ...", "refused"
};
std::string auto_event_json(const AutoEvent& event);
AutoEvent parse_auto_event(const std::string& json, const std::string& where);
// etcdadm-auto/events/<UTC yyyymmddThhmmss.uuuuuu>Z-<host>.json: key order is time order.
std::string auto_event_key(const AutoEvent& event);

// ---- in a store ----
// A store that does not exist (a local directory renamed away or never made, a bucket that does
// not exist) is an error of every reader that lists (kNotFound), never a store without records:
// `auto status` must not call a live cluster's store empty.
// With a policy, a spec it refuses is kCorrupt naming why (RecordPolicy::refusal).
std::optional<AutoSpec> read_auto_spec(BlobStore& store, const RecordPolicy* policy = nullptr);
// Signed with the keyring's CA key.
void write_auto_spec(BlobStore& store, const AutoSpec& spec, const RecordKeyring& keyring);
// Every host record; one that does not parse, or that `policy` refuses, is left out and named in
// `unreadable`.
std::vector<HostRecord> read_host_records(BlobStore& store, std::vector<std::string>* unreadable,
                                          const RecordPolicy* policy = nullptr);
std::optional<PauseRecord> read_pause(BlobStore& store);
// The approval of `command_key` (nullopt: none); with a policy, one it refuses is kCorrupt.
std::optional<RestoreApproval> read_restore_approval(BlobStore& store, const std::string& command_key,
                                                     const RecordPolicy* policy = nullptr);
// Signed with the keyring's CA key (kInternal without one), over any earlier approval of the key.
void write_restore_approval(BlobStore& store, const RestoreApproval& approval, const RecordKeyring& keyring);
// Absent: an empty record (nothing maintained yet). With a policy, a record it refuses is kCorrupt.
MaintenanceRecord read_maintenance(BlobStore& store, const RecordPolicy* policy = nullptr);
// Signed with the keyring's CA key.
void write_maintenance(BlobStore& store, const MaintenanceRecord& record, const RecordKeyring& keyring);
// Appends an event; never throws (a store that refuses it is logged: the action itself stands).
void append_auto_event(BlobStore& store, const AutoEvent& event);
// The newest `limit` events, oldest first.
std::vector<AutoEvent> read_auto_events(BlobStore& store, size_t limit);
// Removes all but the newest `keep` events.
void trim_auto_events(BlobStore& store, size_t keep);

}  // namespace etcdadm

#include "controller/status.h"

#include <chrono>
#include <cstdlib>
#include <sstream>

#include "backup/schedule.h"
#include "common/error.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "controller/backup_attestation.h"
#include "controller/decide.h"
#include "etcd/etcd_version.h"
#include "restore/damage.h"
#include "restore/fetch.h"
#include "restore/resolve.h"

namespace etcdadm {

using json = nlohmann::json;

namespace {

// Why the controllers refuse the store's spec, as far as the store alone tells: status runs without
// the CA key, so a copy in spec.json is taken as signed (a controller checks the authenticator),
// and the generation is checked against the hosts' reports.
std::string spec_refusal(const AutoStatus& s) {
  if (std::string p = cluster_spec_problem(*s.spec); !p.empty()) return p;
  uint64_t highest = 0;
  for (const auto& h : s.hosts) highest = std::max(highest, h.spec_generation);
  std::string p = spec_authority_problem(*s.spec, s.auto_spec, false, highest);
  return p.empty() ? p : p + " (hosts started with --accept-unsigned-records obey it)";
}

std::string heard_ago(int64_t now_unix, int64_t then_unix) {
  if (then_unix <= 0) return "never";
  const int64_t d = now_unix - then_unix;
  if (d < 0) return "in " + format_duration_short(std::chrono::seconds(-d)) + " (clock ahead)";
  return format_duration_short(std::chrono::seconds(d)) + " ago";
}

std::string time_of(int64_t unix_seconds) {
  return unix_seconds > 0 ? format_rfc3339_seconds(std::chrono::system_clock::from_time_t(unix_seconds)) : "";
}

}  // namespace

AutoStatus read_auto_status(BlobStore& store, size_t events) {
  AutoStatus s;
  s.store_url = store.url();
  s.now_unix =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  // First: a store that does not exist is an error here (kNotFound), never a store with no spec.
  s.hosts = read_host_records(store, &s.unreadable);
  try {
    s.spec = read_etcd_manager_cluster_spec(store);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt) throw;
    s.unreadable.push_back(e.what());
  }
  s.auto_spec = read_auto_spec(store).value_or(AutoSpec{});
  s.created_nanos = read_etcd_manager_cluster_created(store);
  if (store.stat(kAutoPlanKey)) {
    try {
      s.plan = parse_cluster_plan(store.read_small(kAutoPlanKey, 1 << 20), s.store_url + "/" + kAutoPlanKey);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCorrupt) throw;
      s.unreadable.push_back(e.what());
    }
  }
  s.pause = read_pause(store);
  if (store.stat(kAutoVersionTurnKey)) {
    try {
      s.version_turn =
          parse_version_turn(store.read_small(kAutoVersionTurnKey, 1 << 16), s.store_url + "/" + kAutoVersionTurnKey);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCorrupt) throw;
      s.unreadable.push_back(e.what());
    }
  }
  try {
    s.maintenance = read_maintenance(store);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt) throw;
    s.unreadable.push_back(e.what());
  }
  try {
    if (store.stat(kAutoCaRotationKey)) {
      s.ca_rotation =
          parse_ca_rotation(store.read_small(kAutoCaRotationKey, 1 << 20), s.store_url + "/" + kAutoCaRotationKey);
    }
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt) throw;
    s.unreadable.push_back(e.what());
  }
  try {
    s.commands = list_etcd_manager_commands(store);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt) throw;
    s.unreadable.push_back(e.what());
  }
  if (events > 0) s.events = read_auto_events(store, events);
  return s;
}

// Whether `h`'s CA expires within the spec's warning window.
static bool ca_expires_soon(const AutoStatus& s, const HostRecord& h) {
  return h.ca_expires_unix > 0 && h.ca_expires_unix - s.now_unix < s.auto_spec.ca_warn_before_seconds;
}

json auto_status_json(const AutoStatus& s) {
  json hosts = json::array();
  for (const auto& h : s.hosts) {
    hosts.push_back(
        {{"name", h.name},
         {"peerURL", h.peer_url},
         {"clientURL", h.client_url},
         {"data", data_state_name(h.data)},
         {"memberID", h.member_id},
         {"etcdRunning", h.etcd_running},
         {"waitingFor", h.waiting_for},
         {"certsExpire", h.certs_expire_unix > 0 ? json(time_of(h.certs_expire_unix)) : json(nullptr)},
         {"caExpires", h.ca_expires_unix > 0 ? json(time_of(h.ca_expires_unix)) : json(nullptr)},
         {"caExpiresSoon", ca_expires_soon(s, h)},
         {"heartbeat", time_of(h.heartbeat_unix)},
         {"heartbeatAgeSeconds", h.heartbeat_unix > 0 ? json(s.now_unix - h.heartbeat_unix) : json(nullptr)},
         {"caSha256", h.ca_sha256},
         {"caRotation",
          h.ca_rotation_id.empty() ? json(nullptr) : json{{"id", h.ca_rotation_id}, {"step", h.ca_rotation_step}}},
         {"etcdadmVersion", h.etcdadm_version}});
  }
  json events = json::array();
  for (const auto& e : s.events) {
    events.push_back({{"time", format_rfc3339_micros(from_unix_micros(e.time_micros))},
                      {"host", e.host},
                      {"action", e.action},
                      {"reason", e.reason},
                      {"command", e.command},
                      {"outcome", e.outcome}});
  }
  json plan = nullptr;
  if (s.plan) {
    json members = json::array();
    for (const auto& m : s.plan->members) members.push_back(m.name);
    plan = {{"sequence", s.plan->sequence},
            {"purpose", s.plan->purpose},
            {"members", members},
            {"etcdVersion", s.plan->etcd_version},
            {"writtenBy", s.plan->written_by},
            {"written", time_of(s.plan->written_unix)}};
    if (s.plan->restores()) {
      plan["backup"] = s.plan->backup;
      plan["kubernetesRevisionBump"] = s.plan->kubernetes_revision_bump;
    }
    if (s.plan->purpose == "restore") plan["command"] = s.plan->command_key;
    if (s.plan->purpose == "auto-restore") plan["toRevision"] = s.plan->to_revision;
    if (s.plan->purpose == "adopt") plan["adoptsClusterID"] = id_hex(s.plan->adopts_cluster_id);
  }
  json defrags = json::array();
  for (const auto& [id, d] : s.maintenance.defrags) {
    defrags.push_back({{"memberID", id_hex(id)},
                       {"time", time_of(d.unix)},
                       {"dbSizeBefore", d.db_size_before},
                       {"dbSizeAfter", d.db_size_after},
                       {"stalledMs", d.stalled_ms}});
  }
  json corrupt_members = json::array();
  for (const auto& [id, c] : s.maintenance.corrupt) {
    corrupt_members.push_back({{"memberID", id_hex(id)},
                               {"time", time_of(c.unix)},
                               {"foundBy", c.host},
                               {"revision", c.revision},
                               {"hash", c.hash},
                               {"majorityHash", c.majority_hash}});
  }
  json queue = json::array();
  for (const auto& c : s.commands) {
    queue.push_back(
        {{"key", c.key}, {"restoreBackup", c.restore_backup ? json(c.restore_backup->backup) : json(nullptr)}});
  }
  return {{"store", s.store_url},
          {"spec", s.spec ? json{{"memberCount", s.spec->member_count},
                                 {"etcdVersion", s.spec->etcd_version},
                                 {"refused", spec_refusal(s)}}
                          : json(nullptr)},
          {"replaceAfterSeconds", s.auto_spec.replace_after_seconds},
          {"defrag",
           {{"freePercent", s.auto_spec.defrag_free_percent},
            {"minFreeBytes", s.auto_spec.defrag_min_free_bytes},
            {"schedule", s.auto_spec.defrag_schedule},
            {"members", defrags}}},
          {"nospaceKeepRevisions", s.auto_spec.nospace_keep_revisions},
          {"nospaceDisarmBelowPercent", s.auto_spec.nospace_disarm_below_percent},
          {"corruptCheckSeconds", s.auto_spec.corrupt_check_seconds},
          {"autoRestore", s.auto_spec.auto_restore},
          {"restartWithoutQuorum", s.auto_spec.restart_without_quorum},
          {"autoRestoreDelaySeconds", s.auto_spec.auto_restore_delay_seconds},
          {"recoverQuorum", s.auto_spec.recover_quorum},
          {"certRenewBeforeSeconds", s.auto_spec.cert_renew_before_seconds},
          {"caWarnBeforeSeconds", s.auto_spec.ca_warn_before_seconds},
          {"caRotateBeforeSeconds", s.auto_spec.ca_rotate_before_seconds},
          {"corrupt", corrupt_members},
          {"lastSpaceRecovery", s.maintenance.last_space_recovery
                                    ? json{{"time", time_of(s.maintenance.last_space_recovery->unix)},
                                           {"host", s.maintenance.last_space_recovery->host},
                                           {"keepRevisions", s.maintenance.last_space_recovery->keep_revisions},
                                           {"revision", s.maintenance.last_space_recovery->revision},
                                           {"compactedTo", s.maintenance.last_space_recovery->compacted_to},
                                           {"largestDbBefore", s.maintenance.last_space_recovery->largest_db_before},
                                           {"largestDbAfter", s.maintenance.last_space_recovery->largest_db_after},
                                           {"quota", s.maintenance.last_space_recovery->quota},
                                           {"disarmed", s.maintenance.last_space_recovery->disarmed},
                                           {"note", s.maintenance.last_space_recovery->note}}
                                    : json(nullptr)},
          {"clusterCreated", s.created_nanos.has_value()},
          {"plan", plan},
          {"versionTurn", s.version_turn ? json{{"sequence", s.version_turn->sequence},
                                                {"host", s.version_turn->host},
                                                {"memberID", id_hex(s.version_turn->member_id)},
                                                {"from", s.version_turn->from},
                                                {"to", s.version_turn->to},
                                                {"writtenBy", s.version_turn->written_by},
                                                {"written", time_of(s.version_turn->written_unix)}}
                                         : json(nullptr)},
          {"caRotation", s.ca_rotation ? json{{"id", s.ca_rotation->id},
                                              {"oldCaSha256", s.ca_rotation->old_ca_sha256},
                                              {"newCaSha256", s.ca_rotation->new_ca_sha256},
                                              {"startedBy", s.ca_rotation->started_by},
                                              {"started", time_of(s.ca_rotation->started_unix)},
                                              {"reason", s.ca_rotation->reason},
                                              {"completed", s.ca_rotation->completed_unix > 0
                                                                ? json(time_of(s.ca_rotation->completed_unix))
                                                                : json(nullptr)}}
                                       : json(nullptr)},
          {"commands", queue},
          {"paused",
           s.pause ? json{{"by", s.pause->by}, {"reason", s.pause->reason}, {"since", time_of(s.pause->since_unix)}}
                   : json(nullptr)},
          {"hosts", hosts},
          {"unreadable", s.unreadable},
          {"events", events}};
}

std::string auto_status_text(const AutoStatus& s) {
  std::ostringstream out;
  out << "Store:    " << s.store_url << "\n";
  out << "Spec:     "
      << (s.spec ? std::to_string(s.spec->member_count) + " members of etcd " + s.spec->etcd_version
                 : std::string("none (etcdadm seed writes one)"));
  if (s.spec) {
    if (std::string p = spec_refusal(s); !p.empty()) out << " - REFUSED by every controller: " << p;
  }
  out << "\n";
  out << "Created:  " << (s.created_nanos ? "yes" : "no (the controllers create a cluster once enough hosts are live)")
      << "\n";
  if (s.plan) {
    std::string names;
    for (const auto& m : s.plan->members) names += (names.empty() ? "" : ", ") + m.name;
    out << "Plan:     " << s.plan->sequence << " (" << s.plan->purpose << "): " << names << ", by "
        << s.plan->written_by << " " << heard_ago(s.now_unix, s.plan->written_unix)
        << (s.plan->restores() ? ", from backup " + s.plan->backup : "")
        << (s.plan->to_revision > 0 ? " and its change log to revision " + std::to_string(s.plan->to_revision) : "")
        << "\n";
  }
  if (s.version_turn) {
    out << "Version:  turn " << s.version_turn->sequence << ": " << s.version_turn->host << " from "
        << s.version_turn->from << " to " << s.version_turn->to << ", given by " << s.version_turn->written_by << " "
        << heard_ago(s.now_unix, s.version_turn->written_unix) << "\n";
  }
  if (const auto& sr = s.maintenance.last_space_recovery) {
    out << "NOSPACE:  " << (sr->disarmed ? "recovered " : "NOT recovered ") << heard_ago(s.now_unix, sr->unix)
        << ": the largest db file " << human_bytes(sr->largest_db_before) << " -> " << human_bytes(sr->largest_db_after)
        << " of a quota of " << human_bytes(sr->quota) << (sr->disarmed ? "" : " (" + sr->note + ")") << "\n";
  }
  for (const auto& [id, d] : s.maintenance.defrags) {
    out << "Defrag:   member " << id_hex(id) << " " << heard_ago(s.now_unix, d.unix) << ": "
        << human_bytes(d.db_size_before) << " -> " << human_bytes(d.db_size_after) << ", its clients waited "
        << d.stalled_ms << " ms\n";
  }
  for (const auto& [id, c] : s.maintenance.corrupt) {
    out << "Corrupt:  member " << id_hex(id) << " found by " << c.host << " " << heard_ago(s.now_unix, c.unix)
        << " (HashKV " << c.hash << " at revision " << c.revision << ", the majority's " << c.majority_hash
        << "): removed to be replaced, its data kept aside on its host\n";
  }
  if (const auto& r = s.ca_rotation) {
    out << "CA:       rotation " << r->id << " to " << r->new_ca_sha256.substr(0, 12) << "... started by "
        << r->started_by << " " << heard_ago(s.now_unix, r->started_unix)
        << (r->completed_unix > 0 ? ", completed " + heard_ago(s.now_unix, r->completed_unix)
                                  : std::string(", under way"))
        << "\n";
  }
  for (const auto& c : s.commands) {
    out << "Queued:   "
        << (c.restore_backup ? "restore-backup " + c.restore_backup->backup
                             : std::string("a command etcdadm does not know"))
        << " (" << c.key << ")\n";
  }
  if (s.pause) {
    out << "PAUSED    by " << s.pause->by << " " << heard_ago(s.now_unix, s.pause->since_unix)
        << (s.pause->reason.empty() ? "" : ": " + s.pause->reason) << " (etcdadm auto resume)\n";
  }
  out << "Hosts:    " << s.hosts.size() << "\n";
  for (const auto& h : s.hosts) {
    out << "  " << h.name << "  " << h.peer_url << "  data " << data_state_name(h.data)
        << (h.etcd_running ? ", etcd running" : ", etcd not running") << ", heard "
        << heard_ago(s.now_unix, h.heartbeat_unix) << "\n";
    if (!h.waiting_for.empty()) out << "      " << h.waiting_for << "\n";
    if (s.ca_rotation && s.ca_rotation->completed_unix == 0) {
      out << "      CA rotation " << s.ca_rotation->id << ": "
          << (h.ca_rotation_id == s.ca_rotation->id ? h.ca_rotation_step : std::string("not started")) << "\n";
    }
    if (h.certs_expire_unix > 0) {
      out << "      certificates until "
          << format_rfc3339_seconds(SystemTime(std::chrono::seconds(h.certs_expire_unix))) << ", CA until "
          << format_rfc3339_seconds(SystemTime(std::chrono::seconds(h.ca_expires_unix))) << "\n";
    }
    if (ca_expires_soon(s, h)) {
      out << "      WARNING: the cluster CA expires within the spec's " << s.auto_spec.ca_warn_before_seconds / 86400
          << " days: rotate it (docs/operations.md, \"Runbook: certificates\")\n";
    }
  }
  for (const auto& u : s.unreadable) out << "  unreadable: " << u << "\n";
  if (!s.events.empty()) out << "Last events:\n";
  for (const auto& e : s.events) {
    out << "  " << format_rfc3339_seconds(from_unix_micros(e.time_micros)) << "  " << e.host << "  " << e.action << " ("
        << e.outcome << "): " << e.reason << "\n";
    if (!e.command.empty()) out << "      by hand: " << e.command << "\n";
  }
  return out.str();
}

std::string seed_effect(const AutoStatus& s, const std::optional<EtcdManagerClusterSpec>& before,
                        const EtcdManagerClusterSpec& after) {
  if (s.pause) return "paused (by " + s.pause->by + "): nothing happens until `etcdadm auto resume`";
  if (!s.created_nanos && !s.plan) {
    const int q = quorum_of(after.member_count);
    return "no cluster yet: once " + std::to_string(q) + " of " + std::to_string(after.member_count) +
           " hosts run `etcdadm auto` (" + std::to_string(s.hosts.size()) +
           " registered now), they create one of etcd " + after.etcd_version;
  }
  std::string out;
  if (before && before->member_count != after.member_count) {
    out = "resize from " + std::to_string(before->member_count) + " to " + std::to_string(after.member_count) +
          " members, one change at a time (a learner added then promoted, or the unhealthy and then the highest-named "
          "non-leader removed), each only when it keeps quorum, after a backup";
    const int tolerance_before = fault_tolerance(before->member_count);
    const int tolerance_after = fault_tolerance(after.member_count);
    if (tolerance_after < tolerance_before) {
      out += "; WARNING: this lowers the failures the cluster survives from " + std::to_string(tolerance_before) +
             " to " + std::to_string(tolerance_after) + " member" + (tolerance_after == 1 ? "" : "s");
    }
    if (after.member_count % 2 == 0) {
      out += "; an even size survives no more failures than " + std::to_string(after.member_count - 1) +
             " members, and its quorum is one member larger";
    }
  }
  if (before && before->etcd_version != after.etcd_version) {
    const auto from = EtcdVersion::parse(before->etcd_version);
    const auto to = EtcdVersion::parse(after.etcd_version);
    const bool one_minor = from && to && from->major == to->major && std::abs(from->minor - to->minor) <= 1;
    out +=
        std::string(out.empty() ? "" : "; ") + "version change " + before->etcd_version + " -> " + after.etcd_version +
        (one_minor ? ": one member at a time, followers first and the leader last, each after a backup, as etcd's "
                     "version rules allow (a step they refuse is reported by the acting controller, nothing stopped)"
                   : ": etcd changes one minor at a time, so the controllers will refuse it and wait, nothing stopped "
                     "(seed the next minor first)");
  }
  return out.empty() ? "nothing changes" : out;
}

SeedResult seed_cluster_spec(BlobStore& store, const EtcdManagerClusterSpec& changes,
                             const AutoSpecChanges& auto_changes, const RecordKeyring& keyring, bool dry_run) {
  AutoStatus status;
  try {
    status = read_auto_status(store, 0);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kNotFound) throw;
    status.store_url = store.url();  // a new store: seed makes it
  }
  SeedResult r;
  r.before = status.spec;
  r.auto_spec = status.auto_spec;
  AutoSpec& a = r.auto_spec;
  a.replace_after_seconds = auto_changes.replace_after_seconds.value_or(a.replace_after_seconds);
  a.defrag_free_percent = auto_changes.defrag_free_percent.value_or(a.defrag_free_percent);
  a.defrag_min_free_bytes = auto_changes.defrag_min_free_bytes.value_or(a.defrag_min_free_bytes);
  a.defrag_schedule = auto_changes.defrag_schedule.value_or(a.defrag_schedule);
  a.nospace_keep_revisions = auto_changes.nospace_keep_revisions.value_or(a.nospace_keep_revisions);
  if (a.nospace_keep_revisions < 0) throw Error(ErrorKind::kInvalidArgument, "--nospace-keep-revisions must be >= 0");
  a.nospace_disarm_below_percent = auto_changes.nospace_disarm_below_percent.value_or(a.nospace_disarm_below_percent);
  if (a.nospace_disarm_below_percent < 1 || a.nospace_disarm_below_percent > 100) {
    throw Error(ErrorKind::kInvalidArgument, "--nospace-disarm-below-percent must be 1-100");
  }
  a.corrupt_check_seconds = auto_changes.corrupt_check_seconds.value_or(a.corrupt_check_seconds);
  if (a.corrupt_check_seconds < 0 || a.corrupt_check_seconds > kCorruptCheckMaxSeconds) {
    throw Error(ErrorKind::kInvalidArgument, "--corrupt-check-interval must be 0 (never) to 168h");
  }
  a.cert_renew_before_seconds = auto_changes.cert_renew_before_seconds.value_or(a.cert_renew_before_seconds);
  a.ca_warn_before_seconds = auto_changes.ca_warn_before_seconds.value_or(a.ca_warn_before_seconds);
  a.ca_rotate_before_seconds = auto_changes.ca_rotate_before_seconds.value_or(a.ca_rotate_before_seconds);
  for (int64_t v : {a.cert_renew_before_seconds, a.ca_warn_before_seconds, a.ca_rotate_before_seconds}) {
    if (v < 0 || v > kCertWindowMaxSeconds) {
      throw Error(ErrorKind::kInvalidArgument,
                  "--cert-renew-before, --ca-warn-before and --ca-rotate-before must be 0 to ten years");
    }
  }
  a.auto_restore = auto_changes.auto_restore.value_or(a.auto_restore);
  a.restart_without_quorum = auto_changes.restart_without_quorum.value_or(a.restart_without_quorum);
  a.recover_quorum = auto_changes.recover_quorum.value_or(a.recover_quorum);
  a.auto_restore_delay_seconds = auto_changes.auto_restore_delay_seconds.value_or(a.auto_restore_delay_seconds);
  if (a.auto_restore_delay_seconds <= 0) throw Error(ErrorKind::kInvalidArgument, "--auto-restore-delay must be > 0");
  if (a.defrag_free_percent < 0 || a.defrag_free_percent > 100) {
    throw Error(ErrorKind::kInvalidArgument, "--defrag-free-percent must be 0-100 (0: no defrag for fragmentation)");
  }
  if (!a.defrag_schedule.empty()) {
    try {
      Schedule::parse(a.defrag_schedule);
    } catch (const Error& e) {
      throw Error(ErrorKind::kInvalidArgument, std::string("--defrag-schedule: ") + e.what());
    }
  }
  r.after = status.spec.value_or(EtcdManagerClusterSpec{});
  if (changes.member_count > 0) r.after.member_count = changes.member_count;
  if (!changes.etcd_version.empty()) r.after.etcd_version = changes.etcd_version;
  if (r.after.member_count == 0 || r.after.etcd_version.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "the store has no cluster spec yet: give both --members and --version");
  }
  if (std::string p = cluster_spec_problem(r.after); !p.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "the controllers would refuse this spec: " + p);
  }
  r.effect = seed_effect(status, r.before, r.after);
  if (r.auto_spec.auto_restore != status.auto_spec.auto_restore) {
    const std::string delay = std::to_string(r.auto_spec.auto_restore_delay_seconds) + " s";
    r.effect +=
        std::string(r.effect.empty() ? "" : "; ") +
        (r.auto_spec.auto_restore
             ? "auto-restore on: after a total loss lasting " + delay +
                   " the hosts restore the newest backup their controllers attested and its change log to its end, all "
                   "at once, with no "
                   "person: the cluster comes back at the log's last revision (the writes of the last seconds "
                   "before the loss that the log had not stored are lost), its revision moved past any a client saw; "
                   "the trade-off is that nobody checks first that the newest attested backup is the point to restore"
             : "auto-restore off: after a total loss the hosts wait and name the commands a person runs");
  }
  if (r.auto_spec.recover_quorum != status.auto_spec.recover_quorum) {
    const std::string delay = std::to_string(r.auto_spec.replace_after_seconds) + " s";
    r.effect +=
        std::string(r.effect.empty() ? "" : "; ") +
        (r.auto_spec.recover_quorum
             ? "recover-quorum on: once the cluster has answered without a leader for " + delay +
                   " (replaceAfter) and every member that does not answer is on a host whose record says it "
                   "holds no data, the survivor furthest along becomes a cluster of one (etcdadm recover) and "
                   "the other hosts join it, with no person: the trade-off is that what the lost members had "
                   "committed beyond the survivor and the change log is lost, and a host that cannot be asked "
                   "still blocks it"
             : "recover-quorum off: after a lost quorum the hosts report it and name the commands a person runs");
  }
  r.auto_spec.generation = status.auto_spec.generation + 1;
  r.auto_spec.cluster_spec = r.after;
  if (!keyring.can_sign() && !dry_run) {
    throw Error(ErrorKind::kNotFound, "seed signs the spec with the cluster CA's key, and there is none (ca.key)",
                "run seed where the cluster's ca.crt and ca.key are (--certs-dir): the controllers obey only a spec "
                "their CA signed");
  }
  if (!dry_run) {
    // The signed copy first: a controller that reads between the two writes finds the files
    // disagree and waits a round, where the other order would be the same.
    write_auto_spec(store, r.auto_spec, keyring);
    write_etcd_manager_cluster_spec(store, r.after);
  }
  return r;
}

ApprovedRestore approve_restore_command(const BackupStore& store, Catalog& catalog, const std::string& command_key,
                                        const RecordKeyring& keyring, const std::string& who, int64_t now_unix,
                                        const std::string& verified_db_sha256) {
  if (!keyring.can_sign()) {
    throw Error(ErrorKind::kNotFound, "an approval is signed with the cluster CA's key, and there is none (ca.key)",
                "run it where the cluster's ca.crt and ca.key are (--certs-dir)");
  }
  for (const auto& cmd : list_etcd_manager_commands(*store)) {
    if (!cmd.restore_backup || (!command_key.empty() && cmd.key != command_key)) continue;
    ApprovedRestore out;
    out.approval =
        RestoreApproval{cmd.key, cmd.restore_backup->backup, "", cmd.restore_backup->cluster_spec, who, now_unix};
    out.approval.backup_db_sha256 = verified_db_sha256;
    out.verified = !verified_db_sha256.empty();
    const BackupRecord b = find_backup(*store, catalog, cmd.restore_backup->backup);
    try {
      out.not_attested = backup_attestation_refusal(*store, b, RecordPolicy{&keyring, false});
    } catch (const Error& e) {
      out.not_attested = "the attestation of backup " + b.name + " cannot be read: " + e.what();
    }
    if (!out.verified) {
      if (b.encrypted() && store.keys() == nullptr) {
        out.approval.backup_db_sha256 = b.db_sha256;
      } else {
        with_damage_recorded(*store, catalog, b,
                             [&] { out.approval.backup_db_sha256 = verify_backup(store, b).digest.db_sha256; });
        out.verified = true;
      }
      if (out.approval.backup_db_sha256.empty()) {
        throw Error(ErrorKind::kInvalidArgument,
                    "backup " + b.name + " is encrypted, records no db digest, and no key to verify it was given",
                    "give the store's identity (--identity) so that the backup is verified before it is approved");
      }
    }
    write_restore_approval(*store, out.approval, keyring);
    return out;
  }
  throw Error(ErrorKind::kNotFound,
              command_key.empty() ? "no restore command is queued in " + store->url()
                                  : "no restore command is queued at " + command_key + " in " + store->url(),
              "`etcdadm etcd-manager list-commands` shows the queue");
}

}  // namespace etcdadm

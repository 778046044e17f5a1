#include "controller/records.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>

#include "backup/schedule.h"
#include "common/error.h"
#include "common/json_fields.h"
#include "common/sha256.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "controller/records_parse.h"
#include "etcd/etcd_version.h"
#include "etcdadm/member_config.h"
#include "store/etcd_manager.h"

namespace etcdadm {

using json = nlohmann::json;

namespace {

using namespace records_parse;

constexpr const char* kSpecFormat = "etcdadm-auto-spec/1";
constexpr const char* kHostFormat = "etcdadm-auto-host/1";
constexpr const char* kPlanFormat = "etcdadm-auto-plan/1";
constexpr const char* kPauseFormat = "etcdadm-auto-pause/1";
constexpr const char* kVersionTurnFormat = "etcdadm-auto-version-turn/1";
constexpr const char* kEventFormat = "etcdadm-auto-event/1";
constexpr const char* kApprovalFormat = "etcdadm-auto-approval/1";

}  // namespace

namespace records_parse {

// The parsed object, checked to be of `format`: a record of another (newer) format is refused by
// name, so that an older etcdadm never acts on what it does not understand.
json parse_object(const std::string& text, const char* format, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kCorrupt, where + " is not JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(ErrorKind::kCorrupt, where + " is not a JSON object");
  const std::string got = string_field(j, "format", where);
  if (got != format) {
    throw Error(ErrorKind::kCorrupt, where + " has format \"" + got + "\", not \"" + format + "\"",
                "a newer etcdadm wrote it: run the same etcdadm version on every host");
  }
  return j;
}

void check_name(const std::string& name, const std::string& where) {
  if (!is_usable_member_name(name))
    throw Error(ErrorKind::kCorrupt, where + ": \"" + name + "\" is no usable member name");
}

// https://host:port, nothing else: these go into etcd's flags and certificates.
void check_url(const std::string& url, const std::string& where) {
  bool ok = url.rfind("https://", 0) == 0 && url.size() > 8 && url.size() < 256;
  for (char c : url) ok = ok && c > ' ' && c < 0x7f && c != ',' && c != '=';
  if (!ok) throw Error(ErrorKind::kCorrupt, where + ": \"" + url + "\" is no https:// URL");
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

int64_t positive_seconds(const json& j, const char* key, int64_t fallback, const std::string& where) {
  auto v = integer_field<int64_t>(j, key, where);
  if (!v) return fallback;
  if (*v <= 0 || *v > 365LL * 24 * 3600) throw Error(ErrorKind::kCorrupt, where + ": \"" + key + "\" is out of range");
  return *v;
}

}  // namespace records_parse

std::string auto_probe_key(const std::string& host) { return std::string(kAutoDir) + "/probes/" + host; }

// ---- etcd-manager's spec, as the controllers obey it ----

bool is_etcd_release(const std::string& version) {
  static const std::regex release(R"(v?(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3}))");
  return std::regex_match(version, release);
}

std::string cluster_spec_problem(const EtcdManagerClusterSpec& spec) {
  std::string out;
  if (spec.member_count < 1 || spec.member_count > kMaxClusterMembers) {
    out = "memberCount " + std::to_string(spec.member_count) + " is outside 1-" + std::to_string(kMaxClusterMembers);
  }
  if (!is_etcd_release(spec.etcd_version)) {
    out += std::string(out.empty() ? "" : "; ") + "etcdVersion \"" + spec.etcd_version +
           "\" is no etcd release (major.minor.patch, such as 3.5.17)";
  }
  return out;
}

int fault_tolerance(int members) { return members < 1 ? 0 : (members - 1) / 2; }

std::string spec_authority_problem(const EtcdManagerClusterSpec& spec, const std::optional<AutoSpec>& signed_spec,
                                   bool accept_unsigned, uint64_t highest_generation) {
  if (accept_unsigned) return "";
  const std::string asks = std::to_string(spec.member_count) + " members of etcd \"" + spec.etcd_version + "\"";
  if (!signed_spec || !signed_spec->cluster_spec) {
    return std::string(kEtcdManagerClusterSpecKey) + " (" + asks + ") has no copy signed by the cluster's CA in " +
           kAutoSpecKey +
           " (etcd-manager-ctl wrote it, or an etcdadm seed that did not sign): not obeyed. Run `etcdadm seed` on a "
           "host holding the CA key to make it the spec, or start the controllers with --accept-unsigned-records";
  }
  if (*signed_spec->cluster_spec != spec) {
    return std::string(kEtcdManagerClusterSpecKey) + " asks for " + asks + ", the spec `etcdadm seed` signed for " +
           std::to_string(signed_spec->cluster_spec->member_count) + " members of etcd \"" +
           signed_spec->cluster_spec->etcd_version +
           "\": someone other than seed changed it (etcd-manager-ctl configure-cluster, a store writer), or seed is "
           "writing it this moment. Not obeyed; run `etcdadm seed` to make it the spec";
  }
  if (signed_spec->generation < highest_generation) {
    return std::string(kAutoSpecKey) + " is generation " + std::to_string(signed_spec->generation) +
           ", older than generation " + std::to_string(highest_generation) +
           " this cluster's hosts obeyed: an old spec written back (a replay, or a store restored from a copy). Not "
           "obeyed; `etcdadm seed` writes the next generation";
  }
  return "";
}

// ---- spec ----

std::string auto_spec_json(const AutoSpec& s) {
  json j = {{"format", kSpecFormat},
            {"replaceAfterSeconds", s.replace_after_seconds},
            {"bootstrapSettleSeconds", s.bootstrap_settle_seconds},
            {"defragFreePercent", s.defrag_free_percent},
            {"defragMinFreeBytes", s.defrag_min_free_bytes},
            {"defragSchedule", s.defrag_schedule},
            {"nospaceKeepRevisions", s.nospace_keep_revisions},
            {"nospaceDisarmBelowPercent", s.nospace_disarm_below_percent},
            {"corruptCheckSeconds", s.corrupt_check_seconds},
            {"autoRestore", s.auto_restore},
            {"restartWithoutQuorum", s.restart_without_quorum},
            {"autoRestoreDelaySeconds", s.auto_restore_delay_seconds},
            {"recoverQuorum", s.recover_quorum},
            {"certRenewBeforeSeconds", s.cert_renew_before_seconds},
            {"caWarnBeforeSeconds", s.ca_warn_before_seconds},
            {"caRotateBeforeSeconds", s.ca_rotate_before_seconds},
            {"generation", s.generation}};
  if (s.cluster_spec) {
    j["clusterSpec"] = {{"memberCount", s.cluster_spec->member_count}, {"etcdVersion", s.cluster_spec->etcd_version}};
  }
  return j.dump(2) + "\n";
}

AutoSpec parse_auto_spec(const std::string& text, const std::string& where) {
  json j = parse_object(text, kSpecFormat, where);
  AutoSpec s;
  s.replace_after_seconds = positive_seconds(j, "replaceAfterSeconds", s.replace_after_seconds, where);
  s.bootstrap_settle_seconds = positive_seconds(j, "bootstrapSettleSeconds", s.bootstrap_settle_seconds, where);
  // Added to format 1 (absent in older specs: the defaults).
  s.defrag_free_percent = integer_field<int>(j, "defragFreePercent", where).value_or(s.defrag_free_percent);
  if (s.defrag_free_percent < 0 || s.defrag_free_percent > 100) {
    throw Error(ErrorKind::kCorrupt, where + ": \"defragFreePercent\" is not 0-100");
  }
  s.defrag_min_free_bytes = integer_field<int64_t>(j, "defragMinFreeBytes", where).value_or(s.defrag_min_free_bytes);
  if (s.defrag_min_free_bytes < 0) throw Error(ErrorKind::kCorrupt, where + ": \"defragMinFreeBytes\" is negative");
  s.defrag_schedule = string_field(j, "defragSchedule", where);
  s.nospace_keep_revisions =
      integer_field<int64_t>(j, "nospaceKeepRevisions", where).value_or(s.nospace_keep_revisions);
  if (s.nospace_keep_revisions < 0) throw Error(ErrorKind::kCorrupt, where + ": \"nospaceKeepRevisions\" is negative");
  s.nospace_disarm_below_percent =
      integer_field<int>(j, "nospaceDisarmBelowPercent", where).value_or(s.nospace_disarm_below_percent);
  if (s.nospace_disarm_below_percent < 1 || s.nospace_disarm_below_percent > 100) {
    throw Error(ErrorKind::kCorrupt, where + ": \"nospaceDisarmBelowPercent\" is not 1-100");
  }
  s.corrupt_check_seconds = integer_field<int64_t>(j, "corruptCheckSeconds", where).value_or(s.corrupt_check_seconds);
  if (s.corrupt_check_seconds < 0 || s.corrupt_check_seconds > kCorruptCheckMaxSeconds) {
    throw Error(ErrorKind::kCorrupt,
                where + ": \"corruptCheckSeconds\" is not 0-" + std::to_string(kCorruptCheckMaxSeconds));
  }
  s.auto_restore = bool_field(j, "autoRestore", where);
  s.restart_without_quorum = bool_field(j, "restartWithoutQuorum", where);
  s.recover_quorum = bool_field(j, "recoverQuorum", where);
  for (auto [field, value] : {std::pair{"certRenewBeforeSeconds", &s.cert_renew_before_seconds},
                              std::pair{"caWarnBeforeSeconds", &s.ca_warn_before_seconds},
                              std::pair{"caRotateBeforeSeconds", &s.ca_rotate_before_seconds}}) {
    *value = integer_field<int64_t>(j, field, where).value_or(*value);
    if (*value < 0 || *value > kCertWindowMaxSeconds) {
      throw Error(ErrorKind::kCorrupt, where + ": \"" + field + "\" is not 0-" + std::to_string(kCertWindowMaxSeconds));
    }
  }
  s.auto_restore_delay_seconds = positive_seconds(j, "autoRestoreDelaySeconds", s.auto_restore_delay_seconds, where);
  s.generation = integer_field<uint64_t>(j, "generation", where).value_or(0);
  if (j.contains("clusterSpec")) {
    const json& c = j["clusterSpec"];
    if (!c.is_object()) throw Error(ErrorKind::kCorrupt, where + ": \"clusterSpec\" is not an object");
    EtcdManagerClusterSpec cs;
    cs.member_count = integer_field<int>(c, "memberCount", where).value_or(0);
    cs.etcd_version = string_field(c, "etcdVersion", where);
    s.cluster_spec = cs;
  }
  if (!s.defrag_schedule.empty()) {
    try {
      Schedule::parse(s.defrag_schedule);
    } catch (const Error& e) {
      throw Error(ErrorKind::kCorrupt, where + ": \"defragSchedule\": " + e.what());
    }
  }
  return s;
}

// ---- hosts ----

const char* data_state_name(DataState state) {
  switch (state) {
    case DataState::kEmpty:
      return "empty";
    case DataState::kMember:
      return "member";
    case DataState::kLost:
      return "lost";
    case DataState::kUnavailable:
      return "unavailable";
  }
  return "?";
}

std::optional<DataState> parse_data_state(const std::string& name) {
  for (DataState s : {DataState::kEmpty, DataState::kMember, DataState::kLost, DataState::kUnavailable}) {
    if (name == data_state_name(s)) return s;
  }
  return std::nullopt;
}

const char* set_aside_name(SetAside kind) {
  switch (kind) {
    case SetAside::kNone:
      return "";
    case SetAside::kCorrupt:
      return "corrupt";
    case SetAside::kRemoved:
      return "removed";
  }
  return "?";
}

bool is_host_id(const std::string& id) {
  return id.size() == 32 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string new_host_id() { return random_hex(16); }

std::string host_record_key(const std::string& name) { return std::string(kAutoHostsPrefix) + name + ".json"; }

std::string host_record_json(const HostRecord& h) {
  json j = {{"format", kHostFormat},
            {"name", h.name},
            {"hostID", h.host_id},
            {"peerURL", h.peer_url},
            {"clientURL", h.client_url},
            {"caSha256", h.ca_sha256},
            {"etcdadmVersion", h.etcdadm_version},
            {"heartbeatUnix", h.heartbeat_unix},
            {"sequence", h.sequence},
            {"data", data_state_name(h.data)},
            {"clusterToken", h.cluster_token},
            {"memberID", h.member_id},
            {"etcdRunning", h.etcd_running},
            {"hasLeader", h.has_leader},
            {"waitingFor", h.waiting_for},
            {"certsExpireUnix", h.certs_expire_unix},
            {"caExpiresUnix", h.ca_expires_unix}};
  if (!h.ca_rotation_id.empty()) {
    j["caRotationID"] = h.ca_rotation_id;
    j["caRotationStep"] = h.ca_rotation_step;
  }
  if (!h.etcd_refused.empty()) j["etcdRefused"] = h.etcd_refused;
  if (h.spec_generation != 0) j["specGeneration"] = h.spec_generation;
  return j.dump(2) + "\n";
}

HostRecord parse_host_record(const std::string& text, const std::string& where) {
  json j = parse_object(text, kHostFormat, where);
  HostRecord h;
  h.name = required_string(j, "name", where);
  check_name(h.name, where);
  h.host_id = string_field(j, "hostID", where);
  if (!h.host_id.empty() && !is_host_id(h.host_id))
    throw Error(ErrorKind::kCorrupt, where + ": \"hostID\" is not 32 hex digits");
  h.peer_url = required_string(j, "peerURL", where);
  check_url(h.peer_url, where);
  h.client_url = required_string(j, "clientURL", where);
  check_url(h.client_url, where);
  h.ca_sha256 = string_field(j, "caSha256", where);
  h.etcdadm_version = string_field(j, "etcdadmVersion", where);
  h.heartbeat_unix = integer_field<int64_t>(j, "heartbeatUnix", where).value_or(0);
  h.sequence = integer_field<uint64_t>(j, "sequence", where).value_or(0);
  const std::string data = string_field(j, "data", where);
  const auto state = parse_data_state(data);
  if (!state)
    throw Error(ErrorKind::kCorrupt,
                where + ": \"data\" is \"" + data.substr(0, 64) + "\", not empty, member, lost or unavailable");
  h.data = *state;
  h.cluster_token = string_field(j, "clusterToken", where);
  h.member_id = integer_field<uint64_t>(j, "memberID", where).value_or(0);
  h.etcd_running = bool_field(j, "etcdRunning", where);
  h.has_leader = bool_field(j, "hasLeader", where);
  h.waiting_for = string_field(j, "waitingFor", where);
  h.certs_expire_unix = integer_field<int64_t>(j, "certsExpireUnix", where).value_or(0);
  h.ca_expires_unix = integer_field<int64_t>(j, "caExpiresUnix", where).value_or(0);
  h.ca_rotation_id = string_field(j, "caRotationID", where);
  h.ca_rotation_step = string_field(j, "caRotationStep", where);
  if (h.ca_rotation_step != "" && h.ca_rotation_step != "reissued" && h.ca_rotation_step != "switched") {
    throw Error(ErrorKind::kCorrupt,
                where + ": \"caRotationStep\" is \"" + h.ca_rotation_step + "\", not reissued or switched");
  }
  h.spec_generation = integer_field<uint64_t>(j, "specGeneration", where).value_or(0);
  h.etcd_refused = string_field(j, "etcdRefused", where);
  if (h.etcd_refused != "" && h.etcd_refused != kEtcdRefusedInconsistent) {
    throw Error(ErrorKind::kCorrupt, where + ": \"etcdRefused\" is \"" + h.etcd_refused.substr(0, 64) + "\", not " +
                                         kEtcdRefusedInconsistent);
  }
  return h;
}

// ---- plan ----

std::string ClusterPlan::initial_cluster() const {
  std::string out;
  for (const auto& m : members) out += (out.empty() ? "" : ",") + m.name + "=" + m.peer_url;
  return out;
}

const PlannedMember* ClusterPlan::member(const std::string& name) const {
  for (const auto& m : members) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string cluster_plan_json(const ClusterPlan& p) {
  json members = json::array();
  for (const auto& m : p.members)
    members.push_back({{"name", m.name}, {"peerURL", m.peer_url}, {"clientURL", m.client_url}});
  json j = {{"format", kPlanFormat},
            {"sequence", p.sequence},
            {"purpose", p.purpose},
            {"clusterToken", p.cluster_token},
            {"etcdVersion", p.etcd_version},
            {"caSha256", p.ca_sha256},
            {"members", members},
            {"writtenBy", p.written_by},
            {"writtenUnix", p.written_unix}};
  if (p.restores()) {
    j["backup"] = p.backup;
    j["kubernetesRevisionBump"] = p.kubernetes_revision_bump;
    if (p.replaces_cluster_id != 0) j["replacesClusterID"] = p.replaces_cluster_id;
    if (!p.backup_db_sha256.empty()) j["backupDbSha256"] = p.backup_db_sha256;
  }
  if (p.purpose == "recover-quorum") {
    j["recoversMemberID"] = p.recovers_member_id;
    j["survivorRevision"] = p.survivor_revision;
    j["replacesClusterID"] = p.replaces_cluster_id;
    // Planned for a queued restore whose backup this survivor is further along than.
    if (!p.command_key.empty()) j["command"] = p.command_key;
  }
  if (p.purpose == "restore") j["command"] = p.command_key;
  if (p.purpose == "auto-restore") j["toRevision"] = p.to_revision;
  if (p.purpose == "adopt") j["adoptsClusterID"] = p.adopts_cluster_id;
  return j.dump(2) + "\n";
}

ClusterPlan parse_cluster_plan(const std::string& text, const std::string& where) {
  json j = parse_object(text, kPlanFormat, where);
  ClusterPlan p;
  p.sequence = required_integer<uint64_t>(j, "sequence", where);
  p.purpose = required_string(j, "purpose", where);
  if (p.purpose != "create" && p.purpose != "restore" && p.purpose != "auto-restore" && p.purpose != "recover-quorum" &&
      p.purpose != "adopt") {
    throw Error(ErrorKind::kCorrupt, where + ": purpose \"" + p.purpose + "\" is not one this etcdadm knows",
                "run the same etcdadm version on every host");
  }
  if (p.restores()) {
    p.backup = required_string(j, "backup", where);
    bool ok = !p.backup.empty() && p.backup.size() < 256 && p.backup.find("..") == std::string::npos;
    for (char c : p.backup) ok = ok && c > ' ' && c < 0x7f && c != '/' && c != '\\';
    if (!ok) throw Error(ErrorKind::kCorrupt, where + ": \"" + p.backup + "\" is no backup name");
    if (p.purpose == "restore") p.command_key = required_string(j, "command", where);
    p.kubernetes_revision_bump = integer_field<uint64_t>(j, "kubernetesRevisionBump", where).value_or(0);
    if (p.kubernetes_revision_bump > static_cast<uint64_t>(INT64_MAX / 2)) {
      throw Error(ErrorKind::kCorrupt, where + ": \"kubernetesRevisionBump\" " +
                                           std::to_string(p.kubernetes_revision_bump) +
                                           " is larger than any revision can be moved");
    }
    p.replaces_cluster_id = integer_field<uint64_t>(j, "replacesClusterID", where).value_or(0);
    p.backup_db_sha256 = string_field(j, "backupDbSha256", where);
    if (!p.backup_db_sha256.empty() && !is_sha256_hex(p.backup_db_sha256)) {
      throw Error(ErrorKind::kCorrupt, where + ": \"backupDbSha256\" is no SHA-256 (64 lower-case hex digits)");
    }
    if (p.purpose == "auto-restore") p.to_revision = required_integer<int64_t>(j, "toRevision", where);
    if (p.to_revision < 0) throw Error(ErrorKind::kCorrupt, where + ": \"toRevision\" is negative");
  }
  if (p.purpose == "recover-quorum") {
    p.recovers_member_id = required_integer<uint64_t>(j, "recoversMemberID", where);
    p.survivor_revision = required_integer<int64_t>(j, "survivorRevision", where);
    p.replaces_cluster_id = required_integer<uint64_t>(j, "replacesClusterID", where);
    p.command_key = string_field(j, "command", where);
  }
  if (p.purpose == "adopt") {
    p.adopts_cluster_id = required_integer<uint64_t>(j, "adoptsClusterID", where);
    if (p.adopts_cluster_id == 0) throw Error(ErrorKind::kCorrupt, where + ": \"adoptsClusterID\" is 0");
  }
  if ((p.purpose == "restore" || !p.command_key.empty()) &&
      (!p.command_key.starts_with(std::string(kEtcdManagerControlDir) + "/") ||
       !p.command_key.ends_with(kEtcdManagerCommandFile) || p.command_key.find("..") != std::string::npos)) {
    throw Error(ErrorKind::kCorrupt, where + ": \"command\" is not a command key of control/ (" + p.command_key + ")");
  }
  p.cluster_token = required_string(j, "clusterToken", where);
  check_name(p.cluster_token, where);
  p.etcd_version = required_string(j, "etcdVersion", where);
  if (!is_etcd_release(p.etcd_version))
    throw Error(ErrorKind::kCorrupt, where + ": \"" + p.etcd_version + "\" is no etcd release");
  p.ca_sha256 = string_field(j, "caSha256", where);
  p.written_by = string_field(j, "writtenBy", where);
  p.written_unix = integer_field<int64_t>(j, "writtenUnix", where).value_or(0);
  auto it = j.find("members");
  if (it == j.end() || !it->is_array() || it->empty() || it->size() > kMaxClusterMembers) {
    throw Error(ErrorKind::kCorrupt,
                where + ": \"members\" must list 1 to " + std::to_string(kMaxClusterMembers) + " members");
  }
  for (const auto& m : *it) {
    if (!m.is_object()) throw Error(ErrorKind::kCorrupt, where + ": a member is not an object");
    PlannedMember pm{required_string(m, "name", where), required_string(m, "peerURL", where),
                     required_string(m, "clientURL", where)};
    check_name(pm.name, where);
    check_url(pm.peer_url, where);
    check_url(pm.client_url, where);
    for (const auto& other : p.members) {
      if (other.name == pm.name || other.peer_url == pm.peer_url) {
        throw Error(ErrorKind::kCorrupt, where + ": member " + pm.name + " is listed twice");
      }
    }
    p.members.push_back(std::move(pm));
  }
  if (p.purpose == "recover-quorum" && p.members.size() != 1) {
    throw Error(ErrorKind::kCorrupt, where + ": a recover-quorum plan lists the one survivor that recovers");
  }
  return p;
}

// ---- version turn ----

std::string version_turn_json(const VersionTurn& t) {
  json j = {{"format", kVersionTurnFormat},
            {"sequence", t.sequence},
            {"host", t.host},
            {"memberID", id_hex(t.member_id)},
            {"from", t.from},
            {"to", t.to},
            {"writtenBy", t.written_by},
            {"writtenUnix", t.written_unix}};
  return j.dump(2) + "\n";
}

VersionTurn parse_version_turn(const std::string& text, const std::string& where) {
  json j = parse_object(text, kVersionTurnFormat, where);
  VersionTurn t;
  t.sequence = required_integer<uint64_t>(j, "sequence", where);
  t.host = required_string(j, "host", where);
  check_name(t.host, where);
  const std::string id = required_string(j, "memberID", where);
  t.member_id = parse_id_hex(id).value_or(0);
  if (t.member_id == 0) throw Error(ErrorKind::kCorrupt, where + ": \"" + id + "\" is no member ID");
  t.from = string_field(j, "from", where);
  t.to = required_string(j, "to", where);
  if (!is_etcd_release(t.to) || (!t.from.empty() && !EtcdVersion::parse(t.from))) {
    throw Error(ErrorKind::kCorrupt, where + ": \"" + t.from + "\" -> \"" + t.to + "\" are no etcd versions");
  }
  t.written_by = string_field(j, "writtenBy", where);
  t.written_unix = integer_field<int64_t>(j, "writtenUnix", where).value_or(0);
  return t;
}

// ---- pause ----

std::string pause_record_json(const PauseRecord& p) {
  json j = {{"format", kPauseFormat}, {"by", p.by}, {"reason", p.reason}, {"sinceUnix", p.since_unix}};
  return j.dump(2) + "\n";
}

PauseRecord parse_pause_record(const std::string& text, const std::string& where) {
  json j = parse_object(text, kPauseFormat, where);
  return PauseRecord{string_field(j, "by", where), string_field(j, "reason", where),
                     integer_field<int64_t>(j, "sinceUnix", where).value_or(0)};
}

// ---- restore approvals ----

std::string restore_approval_json(const RestoreApproval& a) {
  json j = {{"format", kApprovalFormat},
            {"command", a.command_key},
            {"backup", a.backup},
            {"backupDbSha256", a.backup_db_sha256},
            {"memberCount", a.into.member_count},
            {"etcdVersion", a.into.etcd_version},
            {"approvedBy", a.approved_by},
            {"approvedUnix", a.approved_unix}};
  return j.dump(2) + "\n";
}

RestoreApproval parse_restore_approval(const std::string& text, const std::string& where) {
  json j = parse_object(text, kApprovalFormat, where);
  RestoreApproval a;
  a.command_key = required_string(j, "command", where);
  a.backup = required_string(j, "backup", where);
  a.backup_db_sha256 = string_field(j, "backupDbSha256", where);
  a.into.member_count = integer_field<int>(j, "memberCount", where).value_or(0);
  a.into.etcd_version = string_field(j, "etcdVersion", where);
  a.approved_by = string_field(j, "approvedBy", where);
  a.approved_unix = integer_field<int64_t>(j, "approvedUnix", where).value_or(0);
  return a;
}

std::string restore_approval_key(const std::string& command_key) {
  // control/<dir>/_command.json -> <dir>
  std::string dir = command_key;
  if (dir.rfind("control/", 0) == 0) dir.erase(0, 8);
  if (const auto slash = dir.find('/'); slash != std::string::npos) dir.erase(slash);
  return std::string(kAutoApprovalsPrefix) + dir + ".json";
}

std::string restore_approval_problem(const EtcdManagerCommand& command, const std::optional<RestoreApproval>& a) {
  if (!command.restore_backup) return command.key + " is no restore command";
  const auto& r = *command.restore_backup;
  const std::string how =
      "; `etcdadm auto approve-restore` on a host holding the cluster CA's key approves it (after checking the "
      "backup), `etcdadm etcd-manager delete-command` removes it";
  if (!a) {
    return "the restore command " + command.key + " (backup " + r.backup +
           ") has no approval signed by the cluster's CA: not carried out (etcd-manager-ctl or a store writer queued "
           "it)" +
           how;
  }
  if (a->command_key != command.key || a->backup != r.backup || a->into != r.cluster_spec) {
    return "the approval " + restore_approval_key(command.key) + " is of " + a->command_key + " (backup " + a->backup +
           ", " + std::to_string(a->into.member_count) + " members of etcd \"" + a->into.etcd_version +
           "\"), not of the command queued (backup " + r.backup + ", " + std::to_string(r.cluster_spec.member_count) +
           " members of etcd \"" + r.cluster_spec.etcd_version + "\"): not carried out" + how;
  }
  if (!records_parse::is_sha256_hex(a->backup_db_sha256)) {
    return "the approval " + restore_approval_key(command.key) + " binds no digest of backup " + r.backup +
           " (written before approvals bound one): not carried out; approve it again" + how;
  }
  return "";
}

// ---- events ----

std::string auto_event_json(const AutoEvent& e) {
  json j = {{"format", kEventFormat}, {"timeMicros", e.time_micros}, {"host", e.host},      {"action", e.action},
            {"reason", e.reason},     {"command", e.command},        {"outcome", e.outcome}};
  return j.dump(2) + "\n";
}

AutoEvent parse_auto_event(const std::string& text, const std::string& where) {
  json j = parse_object(text, kEventFormat, where);
  AutoEvent e;
  e.time_micros = required_integer<int64_t>(j, "timeMicros", where);
  e.host = string_field(j, "host", where);
  e.action = required_string(j, "action", where);
  e.reason = string_field(j, "reason", where);
  e.command = string_field(j, "command", where);
  e.outcome = string_field(j, "outcome", where);
  return e;
}

std::string auto_event_key(const AutoEvent& e) {
  std::tm tm = utc_tm(from_unix_micros(e.time_micros));
  char stamp[48];
  std::snprintf(stamp, sizeof(stamp), "%04d%02d%02dT%02d%02d%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(((e.time_micros % 1000000) + 1000000) % 1000000));
  return std::string(kAutoEventsPrefix) + stamp + "-" + e.host + ".json";
}

}  // namespace etcdadm

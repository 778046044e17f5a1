// The records of the controllers' maintenance (controller/records.h): the maintenance record
// (defrags, the lease, NOSPACE recoveries, members found corrupt) and the CA rotation record.
#include <functional>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_fields.h"
#include "common/text.h"
#include "controller/records.h"
#include "controller/records_parse.h"

namespace etcdadm {

using json = nlohmann::json;
using namespace records_parse;

namespace {

constexpr const char* kMaintenanceFormat = "etcdadm-auto-maintenance/1";
constexpr const char* kCaRotationFormat = "etcdadm-auto-ca-rotation/1";

}  // namespace

// ---- maintenance ----

// Calls `visit(id, entry, where)` for every entry of the object j[field] keyed by member ID (hex);
// an absent field is empty.
static void for_each_by_member_id(const json& j, const char* field, const std::string& where,
                                  const std::function<void(uint64_t, const json&, const std::string&)>& visit) {
  if (!j.contains(field)) return;
  const json& entries = j[field];
  if (!entries.is_object()) throw Error(ErrorKind::kCorrupt, where + ": \"" + field + "\" is not an object");
  for (const auto& [key, entry] : entries.items()) {
    const std::string at = where + ": " + field + "." + key;
    auto id = parse_id_hex(key);
    if (!id || *id == 0) throw Error(ErrorKind::kCorrupt, at + " is no member ID");
    if (!entry.is_object()) throw Error(ErrorKind::kCorrupt, at + " is not an object");
    visit(*id, entry, at);
  }
}

std::string maintenance_record_json(const MaintenanceRecord& r) {
  json defrags = json::object();
  for (const auto& [id, d] : r.defrags) {
    defrags[id_hex(id)] = {{"unix", d.unix},
                           {"dbSizeBefore", d.db_size_before},
                           {"dbSizeAfter", d.db_size_after},
                           {"stalledMs", d.stalled_ms}};
  }
  json j = {{"format", kMaintenanceFormat}, {"sequence", r.sequence}, {"defrags", defrags}};
  if (!r.corrupt.empty()) {
    json corrupt = json::object();
    for (const auto& [id, c] : r.corrupt) {
      corrupt[id_hex(id)] = {{"unix", c.unix},
                             {"host", c.host},
                             {"revision", c.revision},
                             {"hash", c.hash},
                             {"majorityHash", c.majority_hash},
                             {"alarmSettled", c.alarm_settled}};
      if (c.refused_to_start) corrupt[id_hex(id)]["refusedToStart"] = true;
    }
    j["corrupt"] = corrupt;
  }
  if (const auto& l = r.in_progress)
    j["inProgress"] = {{"step", l->step}, {"host", l->host}, {"sinceUnix", l->since_unix}};
  if (const auto& sr = r.last_space_recovery) {
    j["lastSpaceRecovery"] = {{"unix", sr->unix},
                              {"host", sr->host},
                              {"keepRevisions", sr->keep_revisions},
                              {"revision", sr->revision},
                              {"compactedTo", sr->compacted_to},
                              {"largestDbBefore", sr->largest_db_before},
                              {"largestDbAfter", sr->largest_db_after},
                              {"quota", sr->quota},
                              {"disarmed", sr->disarmed},
                              {"note", sr->note}};
  }
  return j.dump(2) + "\n";
}

MaintenanceRecord parse_maintenance_record(const std::string& text, const std::string& where) {
  json j = parse_object(text, kMaintenanceFormat, where);
  MaintenanceRecord r;
  r.sequence = integer_field<uint64_t>(j, "sequence", where).value_or(0);
  if (j.contains("inProgress")) {
    const json& l = j["inProgress"];
    const std::string at = where + ": inProgress";
    if (!l.is_object()) throw Error(ErrorKind::kCorrupt, at + " is not an object");
    MaintenanceLease lease;
    lease.step = required_string(l, "step", at);
    lease.host = required_string(l, "host", at);
    check_name(lease.host, at);
    lease.since_unix = required_integer<int64_t>(l, "sinceUnix", at);
    r.in_progress = lease;
  }
  if (j.contains("lastSpaceRecovery")) {
    const json& sr = j["lastSpaceRecovery"];
    const std::string at = where + ": lastSpaceRecovery";
    if (!sr.is_object()) throw Error(ErrorKind::kCorrupt, at + " is not an object");
    SpaceRecoveryRecord x;
    x.unix = required_integer<int64_t>(sr, "unix", at);
    x.host = string_field(sr, "host", at);
    x.keep_revisions = integer_field<int64_t>(sr, "keepRevisions", at).value_or(0);
    x.revision = integer_field<int64_t>(sr, "revision", at).value_or(0);
    x.compacted_to = integer_field<int64_t>(sr, "compactedTo", at).value_or(0);
    x.largest_db_before = integer_field<int64_t>(sr, "largestDbBefore", at).value_or(0);
    x.largest_db_after = integer_field<int64_t>(sr, "largestDbAfter", at).value_or(0);
    x.quota = integer_field<int64_t>(sr, "quota", at).value_or(0);
    x.disarmed = bool_field(sr, "disarmed", at);
    x.note = string_field(sr, "note", at);
    r.last_space_recovery = x;
  }
  for_each_by_member_id(j, "corrupt", where, [&](uint64_t id, const json& c, const std::string& at) {
    CorruptMember m;
    m.unix = required_integer<int64_t>(c, "unix", at);
    m.host = string_field(c, "host", at);
    m.revision = integer_field<int64_t>(c, "revision", at).value_or(0);
    m.hash = integer_field<uint32_t>(c, "hash", at).value_or(0);
    m.majority_hash = integer_field<uint32_t>(c, "majorityHash", at).value_or(0);
    m.alarm_settled = bool_field(c, "alarmSettled", at);
    m.refused_to_start = bool_field(c, "refusedToStart", at);
    r.corrupt[id] = m;
  });
  for_each_by_member_id(j, "defrags", where, [&](uint64_t id, const json& d, const std::string& at) {
    MemberDefrag m;
    m.unix = required_integer<int64_t>(d, "unix", at);
    m.db_size_before = integer_field<int64_t>(d, "dbSizeBefore", at).value_or(0);
    m.db_size_after = integer_field<int64_t>(d, "dbSizeAfter", at).value_or(0);
    m.stalled_ms = integer_field<int64_t>(d, "stalledMs", at).value_or(0);
    r.defrags[id] = m;
  });
  return r;
}

// ---- CA rotation ----

namespace {

bool is_rotation_id(const std::string& id) {
  // yyyymmddThhmmssZ: it names files (ca.retired-<id>.crt).
  if (id.size() != 16 || id[8] != 'T' || id[15] != 'Z') return false;
  for (size_t i = 0; i < 15; ++i) {
    if (i != 8 && (id[i] < '0' || id[i] > '9')) return false;
  }
  return true;
}

}  // namespace

std::string CaRotationRecord::seal_context() const {
  return std::string(kCaRotationFormat) + "|" + id + "|" + old_ca_sha256 + "|" + new_ca_sha256;
}

std::string ca_rotation_json(const CaRotationRecord& r) {
  json j = {{"format", kCaRotationFormat},    {"id", r.id},         {"oldCaSha256", r.old_ca_sha256},
            {"newCaSha256", r.new_ca_sha256}, {"sealed", r.sealed}, {"startedBy", r.started_by},
            {"startedUnix", r.started_unix},  {"reason", r.reason}, {"completedUnix", r.completed_unix}};
  return j.dump(2) + "\n";
}

CaRotationRecord parse_ca_rotation(const std::string& text, const std::string& where) {
  json j = parse_object(text, kCaRotationFormat, where);
  CaRotationRecord r;
  r.id = required_string(j, "id", where);
  if (!is_rotation_id(r.id)) throw Error(ErrorKind::kCorrupt, where + ": \"id\" is not of the form yyyymmddThhmmssZ");
  r.old_ca_sha256 = required_string(j, "oldCaSha256", where);
  r.new_ca_sha256 = required_string(j, "newCaSha256", where);
  if (!is_sha256_hex(r.old_ca_sha256) || !is_sha256_hex(r.new_ca_sha256) || r.old_ca_sha256 == r.new_ca_sha256) {
    throw Error(ErrorKind::kCorrupt,
                where + ": the CA fingerprints are not two different lowercase SHA-256 hex strings");
  }
  r.sealed = required_string(j, "sealed", where);
  if (r.sealed.size() > (1 << 16)) throw Error(ErrorKind::kCorrupt, where + ": \"sealed\" is too long");
  r.started_by = string_field(j, "startedBy", where);
  r.started_unix = integer_field<int64_t>(j, "startedUnix", where).value_or(0);
  r.reason = string_field(j, "reason", where);
  r.completed_unix = integer_field<int64_t>(j, "completedUnix", where).value_or(0);
  return r;
}

}  // namespace etcdadm

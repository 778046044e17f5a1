#include "render/snapshot_inspection.h"

#include <fmt/format.h>

#include <iomanip>
#include <sstream>

#include "common/key_text.h"
#include "common/text.h"
#include "render/json.h"

namespace etcdadm::render {

nlohmann::json backup_source_json(const std::string& backup, const std::string& store_url) {
  return {{"backup", backup}, {"store", store_url}};
}

nlohmann::json file_source_json(const std::string& file, std::optional<bool> trailer_checked) {
  nlohmann::json j = {{"file", file}};
  if (trailer_checked) j["trailerChecked"] = *trailer_checked;
  return j;
}

nlohmann::json snapshot_inspection_json(const SnapshotInspection& r, StatusSemantics semantics,
                                        int64_t status_total_key, const nlohmann::json& source) {
  nlohmann::json j = {{"hash", r.status.hash},
                      {"revision", r.status.revision},
                      {"totalKey", status_total_key},
                      {"totalSize", r.status.total_size}};
  if (!r.status.version.empty()) j["version"] = r.status.version;
  j["semantics"] = semantics == StatusSemantics::kEtcd36 ? "3.6" : "3.4";
  j["members"] = nlohmann::json::array();
  for (const auto& m : r.members) {
    j["members"].push_back({{"memberId", id_hex(m.id)},
                            {"name", m.name},
                            {"peerUrls", m.peer_urls},
                            {"clientUrls", m.client_urls},
                            {"learner", m.learner}});
  }
  j["removedMembers"] = nlohmann::json::array();
  for (auto id : r.removed_member_ids) j["removedMembers"].push_back(id_hex(id));
  j["clusterVersion"] = r.cluster_version;
  j["consistentIndex"] = r.consistent_index;
  j["term"] = r.term;
  j["scheduledCompactRevision"] =
      r.scheduled_compact_revision ? nlohmann::json(*r.scheduled_compact_revision) : nullptr;
  j["finishedCompactRevision"] = r.finished_compact_revision ? nlohmann::json(*r.finished_compact_revision) : nullptr;
  j["liveKeys"] = r.live_keys;
  j["revisions"] = r.revisions;
  j["prefixes"] = nlohmann::json::array();
  for (const auto& p : r.prefixes) {
    nlohmann::json e = {{"keys", p.keys}, {"bytes", p.bytes}};
    put_bytes_json(e, "prefix", p.prefix);
    j["prefixes"].push_back(std::move(e));
  }
  j["leases"] = nlohmann::json::array();
  for (const auto& l : r.leases) {
    j["leases"].push_back({{"id", l.id},
                           {"idHex", fmt::format("{:016x}", static_cast<uint64_t>(l.id))},  // as etcdctl prints leases
                           {"ttl", l.ttl},
                           {"remainingTTL", l.remaining_ttl}});
  }
  j["authEnabled"] = r.auth_enabled;
  j["authRevision"] = r.auth_revision;
  j["users"] = r.users;
  j["roles"] = r.roles;
  j["alarms"] = r.alarms;
  j.update(source);
  return j;
}

std::string snapshot_inspection_text(const SnapshotInspection& r, int64_t status_total_key,
                                     const nlohmann::json& source) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("none"); };
  std::ostringstream o;
  if (source.contains("backup"))
    o << "Backup            " << source["backup"].get<std::string>() << "\n";
  else
    o << "File              " << source["file"].get<std::string>() << "\n";
  if (source.contains("trailerChecked")) {
    o << "SHA-256 trailer   "
      << (source["trailerChecked"].get<bool>() ? "checked" : "not checked (--check-trailer checks it)") << "\n";
  }
  o << "Hash              " << r.status.hash << " (0x" << std::hex << std::setw(8) << std::setfill('0') << r.status.hash
    << std::dec << std::setfill(' ') << ")\n"
    << "Revision          " << r.status.revision << "\n"
    << "Total keys        " << status_total_key << " (bbolt entries)\n"
    << "Total size        " << r.status.total_size << " (" << human_bytes(static_cast<uint64_t>(r.status.total_size))
    << ")\n";
  if (!r.status.version.empty()) o << "Storage version   " << r.status.version << "\n";
  o << "Cluster version   " << (r.cluster_version.empty() ? "unknown" : r.cluster_version) << "\n"
    << "Consistent index  " << r.consistent_index << (r.term ? ", term " + std::to_string(r.term) : "") << "\n"
    << "Compaction        scheduled " << opt(r.scheduled_compact_revision) << ", finished "
    << opt(r.finished_compact_revision) << "\n"
    << "Live keys         " << r.live_keys << " (" << r.revisions << " revisions kept)\n"
    << "Leases            " << r.leases.size() << "\n"
    << "Auth              " << (r.auth_enabled ? "enabled" : "disabled") << " (revision " << r.auth_revision << ", "
    << r.users << " users, " << r.roles << " roles)\n"
    << "Alarms            " << (r.alarms.empty() ? "none" : "") << "\n";
  for (const auto& a : r.alarms) o << "  " << a << "\n";
  o << "Members\n";
  for (const auto& m : r.members) {
    o << "  " << id_hex(m.id) << "  " << (m.name.empty() ? "(unstarted)" : m.name) << (m.learner ? " (learner)" : "");
    for (const auto& u : m.peer_urls) o << "  peer " << u;
    for (const auto& u : m.client_urls) o << "  client " << u;
    o << "\n";
  }
  for (auto id : r.removed_member_ids) o << "  " << id_hex(id) << "  (removed)\n";
  o << "Prefixes\n";
  o << "  " << std::left << std::setw(48) << "PREFIX" << std::right << std::setw(10) << "KEYS" << std::setw(14)
    << "BYTES"
    << "\n";
  for (const auto& p : r.prefixes) {
    o << "  " << std::left << std::setw(48) << (p.prefix.empty() ? "(no prefix)" : printable_bytes(p.prefix, 45))
      << std::right << std::setw(10) << p.keys << std::setw(14) << p.bytes << "\n";
  }
  return o.str();
}

}  // namespace etcdadm::render

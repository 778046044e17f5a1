#include "render/backup_list.h"

#include <fmt/printf.h>

#include <utility>

#include "common/text.h"
#include "render/backup_record.h"
#include "render/change_log.h"
#include "restore/resolve.h"

namespace etcdadm::render {

void write_backup_list_json(std::ostream& os, const std::vector<BackupRecord>& backups,
                            const std::map<std::string, LogWindow>& windows) {
  // Byte for byte what dumping the whole array with indent 2 gives, without holding a document of
  // every record (10,000 backups: 0.17 -> 0.10 s, 73 -> 37 MiB).
  if (backups.empty()) {
    os << "[]\n";
    return;
  }
  std::string out = "[\n";
  for (size_t i = 0; i < backups.size(); ++i) {
    auto j = backup_record_json(backups[i]);
    // Point-in-time restores from this backup reach this far (null: no change log from it).
    j["changeLog"] = log_window_json(windows, backups[i].name);
    out += "  ";
    for (char ch : j.dump(2)) {
      out += ch;
      if (ch == '\n') out += "  ";  // a newline only ever separates lines: dump escapes those in strings
    }
    out += i + 1 < backups.size() ? ",\n" : "\n";
    if (out.size() > (1 << 16)) {
      os << out;
      out.clear();
    }
  }
  os << out << "]\n";
}

std::string backup_list_text(const std::vector<BackupRecord>& backups, const std::map<std::string, LogWindow>& windows,
                             SystemTime now) {
  if (backups.empty()) return "no backups\n";
  std::string out =
      fmt::sprintf("%-27s  %-8s  %-8s  %-10s  %-10s  %-10s  %-10s  %-8s  %-8s  %-8s  %-14s  %s\n", "NAME", "AGE",
                   "STATUS", "REVISION", "KEYS", "DB SIZE", "STORED", "FORMAT", "ETCD", "SOURCE", "DRILLED", "LOG TO");
  int damaged = 0, failed_drills = 0, never_latest = 0;
  for (const auto& r : backups) {
    // A date ahead of this host's clock is no age ("0s" would read as the freshest backup).
    const bool future = r.taken_at_micros > to_unix_micros(now);
    std::string age = !r.taken_at_micros ? "?"
                      : future           ? "future"
                                         : format_duration_short(std::chrono::duration_cast<std::chrono::seconds>(
                                     now - from_unix_micros(r.taken_at_micros)));
    // A verified backup's revision was read from its snapshot: exact, whatever the metadata says.
    std::string rev = r.verification ? std::to_string(r.verification->revision)
                      : r.revision   ? std::to_string(*r.revision) + (r.revision_exact ? "" : "+")
                                     : "-";
    std::string keys = r.verification ? std::to_string(r.verification->live_keys) : "-";
    const bool latest_never = !r.damage && !why_not_latest(r, now).empty();
    const char* status = r.damage         ? "DAMAGED"
                         : latest_never   ? (r.data_file.empty() ? "NO DATA" : "FUTURE")
                         : r.verification ? "verified"
                                          : "-";
    damaged += r.damage ? 1 : 0;
    never_latest += latest_never ? 1 : 0;
    // "gzip", or "gzip+age" for an encrypted backup.
    std::string format = std::string(compression_name(r.compression)) + (r.encrypted() ? "+" + r.encryption : "");
    // How far a point-in-time restore from this backup reaches: "1234 (12s ago)", "+ gap" after it.
    std::string log_to = "-";
    if (auto it = windows.find(r.name); it != windows.end() && it->second.complete_until_micros > 0) {
      const auto& c = it->second.chain;
      // "ago": until when the log is known complete (its newest record, or the heartbeat).
      auto since =
          std::chrono::duration_cast<std::chrono::seconds>(now - from_unix_micros(it->second.complete_until_micros));
      const LogWindow& w = it->second;
      log_to = std::to_string(c.reaches) + " (" + format_duration_short(since) + " ago)" +
               (w.restorable_again ? ", gap to " + std::to_string(*w.restorable_again - 1)
                : w.gap_from       ? ", gap"
                                   : "");
    }
    // The last drill: "ok 2h ago", "FAILED 5m ago".
    std::string drilled = "-";
    if (r.drill) {
      auto since = std::chrono::duration_cast<std::chrono::seconds>(now - from_unix_micros(r.drill->drilled_at_micros));
      drilled = std::string(r.drill->passed ? "ok " : "FAILED ") + format_duration_short(since) + " ago";
      failed_drills += r.drill->passed ? 0 : 1;
    }
    out += fmt::sprintf("%-27s  %-8s  %-8s  %-10s  %-10s  %-10s  %-10s  %-8s  %-8s  %-8s  %-14s  %s\n", r.name, age,
                        status, rev, keys, r.db_size ? human_bytes(*r.db_size) : "-", human_bytes(r.stored_size),
                        format, r.etcd_version.empty() ? "-" : r.etcd_version, r.source, drilled, log_to);
  }
  if (damaged > 0) {
    out += fmt::sprintf("\n%d damaged (`latest` skips them):\n", damaged);
    for (const auto& r : backups) {
      if (r.damage) out += fmt::sprintf("  %s: %s\n", r.name, r.damage->reason);
    }
  }
  if (never_latest > 0) {
    out += fmt::sprintf("\n%d that are no backup to restore (`latest` skips them):\n", never_latest);
    for (const auto& r : backups) {
      if (std::string why = r.damage ? "" : why_not_latest(r, now); !why.empty())
        out += fmt::sprintf("  %s: %s\n", r.name, why);
    }
  }
  // Late windows, each once: backups of one cluster share its log, and each backup's window holds
  // the part of a window after its own revision (the widest part is the whole window).
  std::map<std::pair<std::string, int64_t>, changelog::LateWindow> widest;  // by cluster and last revision
  for (const auto& [name, w] : windows) {
    for (const auto& l : w.late) {
      auto [it, fresh] = widest.emplace(std::pair{l.cluster_id, l.last_revision}, l);
      if (!fresh && l.first_revision < it->second.first_revision) it->second = l;
    }
  }
  if (!widest.empty()) {
    out +=
        "\nchange log windows where commit times are known only approximately (the sidecar's capture was away;\n"
        "--to-time inside one restores what is known committed by then):\n";
  }
  for (const auto& [key, l] : widest) {
    out += "  revisions " + std::to_string(l.first_revision) + ".." + std::to_string(l.last_revision) +
           (widest.size() > 1 ? " of cluster " + l.cluster_id : "") + ": committed after " +
           (l.committed_after_ms > 0 ? format_rfc3339_micros(from_unix_micros(l.committed_after_ms * 1000))
                                     : std::string("an unknown time")) +
           ", received by " + format_rfc3339_micros(from_unix_micros(l.received_ms * 1000)) + "\n";
  }
  if (failed_drills > 0) {
    out += fmt::sprintf("\n%d whose last drill failed:\n", failed_drills);
    for (const auto& r : backups) {
      if (r.drill && !r.drill->passed) out += fmt::sprintf("  %s: %s\n", r.name, r.drill->message);
    }
  }
  return out;
}

nlohmann::json attempt_list_json(const std::vector<AttemptRecord>& attempts) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& a : attempts) arr.push_back(attempt_json(a));
  return arr;
}

std::string attempt_list_text(const std::vector<AttemptRecord>& attempts) {
  if (attempts.empty()) return "no backup attempts recorded on this host\n";
  std::string out =
      fmt::sprintf("%-20s  %-8s  %-8s  %-8s  %s\n", "STARTED", "SECONDS", "BY", "RESULT", "BACKUP / REASON");
  for (const auto& a : attempts) {
    std::string what = a.result == "success" ? a.backup_name : a.reason + ": " + a.message;
    out += fmt::sprintf("%-20s  %-8.2f  %-8s  %-8s  %s\n", format_rfc3339_seconds(from_unix_micros(a.started_micros)),
                        static_cast<double>(a.finished_micros - a.started_micros) / 1e6,
                        a.origin.empty() ? "-" : a.origin, a.result, what);
  }
  return out;
}

}  // namespace etcdadm::render

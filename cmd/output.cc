#include "cmd/output.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <utility>

#include "common/error.h"
#include "common/timefmt.h"
#include "render/backup_record.h"
#include "render/json.h"

namespace etcdadm::cli {

OutputFormat parse_output_format(const std::string& s) {
  if (s == "table" || s == "simple" || s.empty()) return OutputFormat::kTable;
  if (s == "json") return OutputFormat::kJson;
  throw Error(ErrorKind::kInvalidArgument, "unknown output format '" + s + "'",
              "use -o (or -w) table or json; check ETCDCTL_WRITE_OUT, which sets it too");
}

void add_output_format_option(CLI::App* c, std::string& output) {
  c->add_option("-o,-w,--output-format,--write-out", output, "table|json (env ETCDCTL_WRITE_OUT, as etcdctl's -w)")
      ->envname("ETCDCTL_WRITE_OUT");
}

namespace {

// The change log's reach from one backup: revision, when it was received, and a gap after it.
nlohmann::json window_json(const std::map<std::string, LogWindow>& windows, const std::string& name) {
  auto it = windows.find(name);
  if (it == windows.end()) return nullptr;
  const auto& c = it->second.chain;
  nlohmann::json j = {{"revision", c.reaches},
                      {"receivedAt", render::time_json(c.reaches_observed_ms * 1000)},
                      {"completeUntil", render::time_json(it->second.complete_until_micros)},
                      {"segments", c.segments.size()}};
  // The revisions after the window that no backup and log restore: from, to (null: no backup past
  // the gap yet); gapBefore is the first revision restorable again (the next backup's).
  const LogWindow& w = it->second;
  if (w.gap_from) {
    j["gap"] = {{"from", *w.gap_from},
                {"to", w.restorable_again ? nlohmann::json(*w.restorable_again - 1) : nlohmann::json(nullptr)}};
  } else {
    j["gap"] = nullptr;
  }
  j["gapBefore"] = w.restorable_again ? nlohmann::json(*w.restorable_again) : nlohmann::json(nullptr);
  // Revisions whose commit times are known only within a window (capture was away): --to-time
  // inside one restores only what is known committed by then.
  nlohmann::json late = nlohmann::json::array();
  for (const auto& l : w.late) {
    late.push_back(late_window_json(l.first_revision, l.last_revision, l.committed_after_ms * 1000, l.received_ms * 1000));
  }
  j["late"] = late;
  return j;
}

}  // namespace

void print_backups(const std::vector<BackupRecord>& backups, OutputFormat format,
                   const std::map<std::string, LogWindow>& windows) {
  if (format == OutputFormat::kJson) {
    // Written record by record, byte for byte what dumping the whole array with indent 2 gives,
    // without holding a document of every record (10,000 backups: 0.17 -> 0.10 s, 73 -> 37 MiB).
    if (backups.empty()) {
      std::cout << "[]\n";
      return;
    }
    std::string out = "[\n";
    for (size_t i = 0; i < backups.size(); ++i) {
      auto j = render::backup_record_json(backups[i]);
      // Point-in-time restores from this backup reach this far (null: no change log from it).
      j["changeLog"] = window_json(windows, backups[i].name);
      out += "  ";
      for (char ch : j.dump(2)) {
        out += ch;
        if (ch == '\n') out += "  ";  // a newline only ever separates lines: dump escapes those in strings
      }
      out += i + 1 < backups.size() ? ",\n" : "\n";
      if (out.size() > (1 << 16)) {
        std::cout << out;
        out.clear();
      }
    }
    std::cout << out << "]\n";
    return;
  }
  if (backups.empty()) {
    std::cout << "no backups\n";
    return;
  }
  auto now = std::chrono::system_clock::now();
  std::printf("%-27s  %-8s  %-8s  %-10s  %-10s  %-10s  %-10s  %-8s  %-8s  %-8s  %-14s  %s\n", "NAME", "AGE", "STATUS",
              "REVISION", "KEYS", "DB SIZE", "STORED", "FORMAT", "ETCD", "SOURCE", "DRILLED", "LOG TO");
  int damaged = 0, failed_drills = 0;
  for (const auto& r : backups) {
    std::string age = r.taken_at_micros
                          ? format_duration_short(std::chrono::duration_cast<std::chrono::seconds>(now - from_unix_micros(r.taken_at_micros)))
                          : "?";
    // A verified backup's revision was read from its snapshot: exact, whatever the metadata says.
    std::string rev = r.verification ? std::to_string(r.verification->revision)
                      : r.revision   ? std::to_string(*r.revision) + (r.revision_exact ? "" : "+")
                                     : "-";
    std::string keys = r.verification ? std::to_string(r.verification->live_keys) : "-";
    const char* status = r.damage ? "DAMAGED" : r.verification ? "verified" : "-";
    damaged += r.damage ? 1 : 0;
    // "gzip", or "gzip+age" for an encrypted backup.
    std::string format = std::string(compression_name(r.compression)) + (r.encrypted() ? "+" + r.encryption : "");
    // How far a point-in-time restore from this backup reaches: "1234 (12s ago)", "+ gap" after it.
    std::string log_to = "-";
    if (auto it = windows.find(r.name); it != windows.end() && it->second.complete_until_micros > 0) {
      const auto& c = it->second.chain;
      // "ago": until when the log is known complete (its newest record, or the heartbeat).
      auto since = std::chrono::duration_cast<std::chrono::seconds>(now - from_unix_micros(it->second.complete_until_micros));
      const LogWindow& w = it->second;
      log_to = std::to_string(c.reaches) + " (" + format_duration_short(since) + " ago)" +
               (w.restorable_again ? ", gap to " + std::to_string(*w.restorable_again - 1) : w.gap_from ? ", gap" : "");
    }
    // The last drill: "ok 2h ago", "FAILED 5m ago".
    std::string drilled = "-";
    if (r.drill) {
      auto since = std::chrono::duration_cast<std::chrono::seconds>(now - from_unix_micros(r.drill->drilled_at_micros));
      drilled = std::string(r.drill->passed ? "ok " : "FAILED ") + format_duration_short(since) + " ago";
      failed_drills += r.drill->passed ? 0 : 1;
    }
    std::printf("%-27s  %-8s  %-8s  %-10s  %-10s  %-10s  %-10s  %-8s  %-8s  %-8s  %-14s  %s\n", r.name.c_str(), age.c_str(),
                status, rev.c_str(), keys.c_str(), r.db_size ? human_bytes(*r.db_size).c_str() : "-",
                human_bytes(r.stored_size).c_str(), format.c_str(), r.etcd_version.empty() ? "-" : r.etcd_version.c_str(),
                r.source.c_str(), drilled.c_str(), log_to.c_str());
  }
  if (damaged > 0) {
    std::printf("\n%d damaged (`latest` skips them):\n", damaged);
    for (const auto& r : backups) {
      if (r.damage) std::printf("  %s: %s\n", r.name.c_str(), r.damage->reason.c_str());
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
  std::vector<std::string> late_lines;
  for (const auto& [key, l] : widest) {
    late_lines.push_back("  revisions " + std::to_string(l.first_revision) + ".." + std::to_string(l.last_revision) +
                         (widest.size() > 1 ? " of cluster " + l.cluster_id : "") + ": committed after " +
                         (l.committed_after_ms > 0 ? format_rfc3339_micros(from_unix_micros(l.committed_after_ms * 1000))
                                                   : std::string("an unknown time")) +
                         ", received by " + format_rfc3339_micros(from_unix_micros(l.received_ms * 1000)));
  }
  if (!late_lines.empty()) {
    std::printf("\nchange log windows where commit times are known only approximately (the sidecar's capture was away;\n"
                "--to-time inside one restores what is known committed by then):\n");
    for (const auto& line : late_lines) std::printf("%s\n", line.c_str());
  }
  if (failed_drills > 0) {
    std::printf("\n%d whose last drill failed:\n", failed_drills);
    for (const auto& r : backups) {
      if (r.drill && !r.drill->passed) std::printf("  %s: %s\n", r.name.c_str(), r.drill->message.c_str());
    }
  }
  std::cout.flush();
}

void print_attempts(const std::vector<AttemptRecord>& attempts, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& a : attempts) {
      arr.push_back(render::attempt_json(a));
    }
    std::cout << arr.dump(2) << "\n";
    return;
  }
  if (attempts.empty()) {
    std::cout << "no backup attempts recorded on this host\n";
    return;
  }
  std::printf("%-20s  %-8s  %-8s  %-8s  %s\n", "STARTED", "SECONDS", "BY", "RESULT", "BACKUP / REASON");
  for (const auto& a : attempts) {
    std::string what = a.result == "success" ? a.backup_name : a.reason + ": " + a.message;
    std::printf("%-20s  %-8.2f  %-8s  %-8s  %s\n", format_rfc3339_seconds(from_unix_micros(a.started_micros)).c_str(),
                static_cast<double>(a.finished_micros - a.started_micros) / 1e6,
                a.origin.empty() ? "-" : a.origin.c_str(), a.result.c_str(), what.c_str());
  }
  std::cout.flush();
}

nlohmann::json revision_bump_json(const RevisionBump& bump) {
  return {{"by", bump.by}, {"markedCompacted", bump.mark_compacted}, {"reason", bump.reason_name()},
          {"explanation", bump.explanation()}};
}

nlohmann::json late_window_json(int64_t first_revision, int64_t last_revision, int64_t committed_after_micros,
                                int64_t received_micros) {
  return {{"fromRevision", first_revision},
          {"toRevision", last_revision},
          // at most 1: the capture knew no lower bound (changelog/capture.cc)
          {"committedAfter", committed_after_micros > 1 ? render::time_json(committed_after_micros) : nullptr},
          {"receivedAt", render::time_json(received_micros)}};
}

nlohmann::json change_log_check_json(const ChangeLogCheck& log) {
  nlohmann::json j{{"segments", log.segments}, {"fromRevision", log.snapshot_revision + 1}, {"revision", log.reaches},
                   {"receivedAt", render::time_json(log.reaches_observed_ms * 1000)},
                   {"decrypted", log.decrypted}};
  j["records"] = log.decrypted ? nlohmann::json(log.records) : nlohmann::json(nullptr);
  // Revisions the log lacks after its end: a newer backup starts the log again past them.
  j["missingRevisions"] = log.next_segment_start
                              ? nlohmann::json{{"from", log.reaches + 1}, {"to", *log.next_segment_start - 1}}
                              : nlohmann::json(nullptr);
  return j;
}

void print_change_log_check(const ChangeLogCheck& log) {
  if (log.segments == 0) return;
  std::cout << "  change log: " << log.segments << " segment(s) intact, revisions " << log.snapshot_revision + 1 << ".."
            << log.reaches << " (received by " << format_rfc3339_micros(from_unix_micros(log.reaches_observed_ms * 1000))
            << ")" << (log.decrypted ? ", every record checked" : ", not decrypted: digests only") << "\n";
  if (log.next_segment_start) {
    std::cout << "  the log has a gap: revisions " << log.reaches + 1 << ".." << *log.next_segment_start - 1
              << " are not in the store (a newer backup starts the log again)\n";
  }
}

}  // namespace etcdadm::cli

#include "render/change_log.h"

#include <sstream>

#include "common/timefmt.h"
#include "render/json.h"

namespace etcdadm::render {

nlohmann::json late_window_json(int64_t first_revision, int64_t last_revision, int64_t committed_after_micros,
                                int64_t received_micros) {
  return {{"fromRevision", first_revision},
          {"toRevision", last_revision},
          // at most 1: the capture knew no lower bound (changelog/capture.cc)
          {"committedAfter", committed_after_micros > 1 ? time_json(committed_after_micros) : nullptr},
          {"receivedAt", time_json(received_micros)}};
}

nlohmann::json log_window_json(const std::map<std::string, LogWindow>& windows, const std::string& name) {
  auto it = windows.find(name);
  if (it == windows.end()) return nullptr;
  const auto& c = it->second.chain;
  // The change log's reach from one backup: revision, when it was received, and a gap after it.
  nlohmann::json j = {{"revision", c.reaches},
                      {"receivedAt", time_json(c.reaches_observed_ms * 1000)},
                      {"completeUntil", time_json(it->second.complete_until_micros)},
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
    late.push_back(
        late_window_json(l.first_revision, l.last_revision, l.committed_after_ms * 1000, l.received_ms * 1000));
  }
  j["late"] = late;
  return j;
}

nlohmann::json change_log_check_json(const ChangeLogCheck& log) {
  nlohmann::json j{{"segments", log.segments},
                   {"fromRevision", log.snapshot_revision + 1},
                   {"revision", log.reaches},
                   {"receivedAt", time_json(log.reaches_observed_ms * 1000)},
                   {"decrypted", log.decrypted}};
  j["records"] = log.decrypted ? nlohmann::json(log.records) : nlohmann::json(nullptr);
  // Revisions the log lacks after its end: a newer backup starts the log again past them.
  j["missingRevisions"] = log.next_segment_start
                              ? nlohmann::json{{"from", log.reaches + 1}, {"to", *log.next_segment_start - 1}}
                              : nlohmann::json(nullptr);
  return j;
}

std::string change_log_check_text(const ChangeLogCheck& log) {
  if (log.segments == 0) return "";
  std::ostringstream o;
  o << "  change log: " << log.segments << " segment(s) intact, revisions " << log.snapshot_revision + 1 << ".."
    << log.reaches << " (received by " << format_rfc3339_micros(from_unix_micros(log.reaches_observed_ms * 1000)) << ")"
    << (log.decrypted ? ", every record checked" : ", not decrypted: digests only") << "\n";
  if (log.next_segment_start) {
    o << "  the log has a gap: revisions " << log.reaches + 1 << ".." << *log.next_segment_start - 1
      << " are not in the store (a newer backup starts the log again)\n";
  }
  return o.str();
}

}  // namespace etcdadm::render

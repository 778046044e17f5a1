#include "render/drill_report.h"

#include <fmt/printf.h>

namespace etcdadm::render {

std::string drill_report_text(const DrillReport& r) {
  std::string out = "Drill of backup " + r.backup_name + (r.passed ? ": PASSED" : ": FAILED") + "\n";
  if (!r.etcd.path.empty()) out += "  etcd " + r.etcd.version + " (" + r.etcd.path + ", from " + r.etcd.source + ")\n";
  for (const auto& p : r.phases) out += fmt::sprintf("  %-13s %8.2fs\n", p.name, p.seconds);
  if (r.rto_seconds > 0) {
    out += fmt::sprintf("  %-13s %8.2fs  (fetch+verify, restore and start: the measured RTO)\n", "recovery",
                        r.rto_seconds);
  }
  for (const auto& c : r.checks) {
    out += "  " + std::string(c.passed ? "ok   " : "FAIL ") + c.name + ": expected " + c.expected + ", served " +
           c.served + (c.note.empty() ? "" : " (" + c.note + ")") + "\n";
  }
  for (const auto& n : r.notes) out += "  note: " + n + "\n";
  return out;
}

}  // namespace etcdadm::render

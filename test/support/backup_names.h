// Backup names at given times, and the time taken as now, for the tests of retention and prune.
#pragma once

#include <cstdio>
#include <string>

#include "common/timefmt.h"

namespace etcdadm::test {

inline const SystemTime kNow = *parse_rfc3339("2026-11-21T12:30:00Z");

// The backup name of the time `rfc3339` (as make_backup_name writes it) with that suffix.
inline std::string name(const std::string& rfc3339, int suffix = 1) {
  char digits[8];
  std::snprintf(digits, sizeof digits, "%06d", suffix);
  return rfc3339 + "-" + digits;
}

}  // namespace etcdadm::test

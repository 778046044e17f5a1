// When scheduled backups happen. A schedule is one of:
//   - a 5-field cron expression "minute hour day-of-month month day-of-week" with lists (1,15),
//     ranges (1-5), steps (*/15, 0-30/10, 5/20 = 5-max/20) and names (JAN-DEC, SUN-SAT; 7 is Sunday
//     too). As in Vixie cron, when both day fields are restricted a day matches either of them.
//   - @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly
//   - "@every 15m" or a plain duration "15m": a fixed interval.
// Cron times are UTC unless the expression starts with "CRON_TZ=<zone> " (or "TZ=<zone> "), e.g.
// "CRON_TZ=Europe/Berlin 0 2 * * *". A zone needs the process's TZ set to it before any thread
// starts (apply_schedule_time_zone), since the C library converts local time through TZ.
// The schedule itself is stateless: the sidecar computes the next run from the newest backup in
// the store, so a restart neither skips a run nor causes a burst.
#pragma once

#include <bitset>
#include <chrono>
#include <optional>
#include <string>

#include "common/timefmt.h"

namespace etcdadm {

class Schedule {
 public:
  // Throws Error(kInvalidArgument) naming the bad field.
  static Schedule parse(const std::string& spec);

  // The first run strictly after `t`.
  SystemTime next_after(SystemTime t) const;
  const std::string& spec() const { return spec_; }
  bool is_interval() const { return interval_.has_value(); }
  const std::string& time_zone() const { return zone_; }  // "" = UTC

 private:
  std::string spec_;
  std::string zone_;
  std::optional<std::chrono::milliseconds> interval_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // 1..31
  std::bitset<13> months_;         // 1..12
  std::bitset<7> days_of_week_;    // 0..6, Sunday = 0
  bool dom_restricted_ = false;
  bool dow_restricted_ = false;
};

// Sets the process time zone to the schedule's (no-op for UTC schedules). Call before starting
// threads: it changes the TZ environment variable.
void apply_schedule_time_zone(const Schedule& schedule);

}  // namespace etcdadm

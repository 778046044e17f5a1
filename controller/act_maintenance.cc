// Maintenance (controller/decide_maintenance.cc decides): defragmentation and NOSPACE recovery by
// the acting controller, one at a time under the maintenance lease, each after a backup, held back
// after a failure; the maintenance record they update.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "changelog/heartbeat.h"
#include "common/error.h"
#include "common/failpoint.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "etcdadm/maintenance/defrag.h"
#include "etcdadm/maintenance/space.h"
#include "store/blob_capabilities.h"

namespace etcdadm {

using namespace controller_internal;
using std::chrono::steady_clock;

// A maintenance step that failed (a member that stopped answering part way, a timeout, data that
// does not fit the quota) is not tried again every round, its backup and events piling up: the
// same step with the same command (the same members due, the same margin) waits kMaintenanceRetry;
// another (other members due, a new margin in the spec) is acted on at once.
void Controller::maintain(const Decision& d, const Observation& o) {
  const std::string step = step_name(d.step);
  auto wait_once = [&](const std::string& reason) {
    if (reason != last_wait_reason_) record("wait", reason, d.command, "waiting");
    last_wait_reason_ = reason;
  };
  const std::string key = step + "|" + d.command;
  const auto now = steady_clock::now();
  if (auto it = maintenance_failed_.find(key);
      it != maintenance_failed_.end() && now - it->second < kMaintenanceRetry) {
    wait_once("the last " + step + " by this host failed: trying again " +
              format_duration_short(std::chrono::duration_cast<std::chrono::seconds>(kMaintenanceRetry)) +
              " after it (" + d.reason + ")");
    return;
  }
  // A certificate renewal and a CA switch are this host's own steps (any host's, one at a time
  // through the lease); the others are the acting controller's.
  const bool own_step = d.step == Step::kRenewCerts || d.step == Step::kCaSwitch;
  if (!own_step && !still_leads(d)) return;
  // The lease: no second maintenance beside one under way (read fresh: the decision's view may be
  // a round old), taken by a conditional write over the record read.
  auto& conditional = *capability<ConditionalWrites>(*store_);
  const auto read = conditional.read_versioned(kAutoMaintenanceKey, 1 << 20);
  MaintenanceRecord record_now;
  if (read) {
    try {
      record_policy().require(kAutoMaintenanceKey, read->contents);  // a forged lease holds nothing
      record_now = parse_maintenance_record(read->contents, store_->url() + "/" + kAutoMaintenanceKey);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCorrupt) throw;
      spdlog::warn("auto: rewriting the maintenance record: {}", e.what());
    }
  }
  const int64_t now_unix = unix_now();
  // Another host's lease is void once this host has known it for the lease's length: its writer's
  // clock, behind or ahead, never shortens it.
  if (const auto& l = record_now.in_progress;
      l && l->host != member_.name &&
      known_for("lease " + l->step + " " + l->host + " " + std::to_string(l->since_unix)) < kMaintenanceLeaseSeconds) {
    wait_once(l->host + " runs " + l->step + " since " +
              format_rfc3339_seconds(SystemTime(std::chrono::seconds(l->since_unix))) + " (its lease ends " +
              std::to_string(kMaintenanceLeaseSeconds) + " s after)");
    return;
  }
  if (d.step == Step::kRecoverSpace) {
    if (auto held = space_recovery_held(record_now, o.auto_spec, now_unix, o.space_recovery_seen_seconds)) {
      wait_once(*held);
      return;
    }
  }
  record_now.in_progress = MaintenanceLease{step, member_.name, now_unix};
  ++record_now.sequence;
  if (!conditional.write_if(kAutoMaintenanceKey,
                            keyring_.sign(kAutoMaintenanceKey, maintenance_record_json(record_now)),
                            read ? read->version : "")) {
    spdlog::info("auto: the maintenance record changed while this host took the lease: reading it again next round");
    return;
  }
  auto release = [&] {
    update_maintenance([&](MaintenanceRecord& m) {
      if (m.in_progress && m.in_progress->host == member_.name) m.in_progress.reset();
    });
  };
  try {
    if (d.step == Step::kDefragment) {
      defragment(d, o);
    } else if (d.step == Step::kRecoverSpace) {
      recover_space(d, o);
    } else if (d.step == Step::kCaSwitch) {
      ca_switch(d, o);
    } else {
      renew_own_certs(d);
    }
    maintenance_failed_.erase(key);
  } catch (const Error&) {
    maintenance_failed_[key] = now;
    try {
      release();
    } catch (const Error& e) {
      spdlog::warn("auto: the maintenance lease stays until it expires: {}", e.what());
    }
    throw;
  }
  release();
}

// The acting controller defragments the due members itself (Defragment is a call to a member's
// client URL, wherever it runs): one at a time in the decision's order, the cluster checked again
// before each (run_defrag), a backup first; one event per member with what it gained and how long
// its clients waited. A controller killed part way leaves the members done defragmented: the next
// acting controller finds only the others due.
void Controller::defragment(const Decision& d, const Observation& o) {
  DefragOptions opt;
  opt.connection = members_connection(o.hosts);
  opt.local_member_id = o.local.member_id;
  for (uint64_t id : d.members) opt.only.push_back(id_hex(id));
  opt.backup = [&](EtcdClient& cluster) { return backup_through(d, options_.pre_change_backup_age, cluster); };
  opt.on_member = [&](const DefragMemberResult& r) { record_member_defrag(d, r); };
  try {
    run_defrag(opt);
  } catch (const Error& e) {
    record(step_name(d.step), d.reason, d.command, std::string("failed: ") + e.what());
    throw;
  }
  store_view_.reset();
}

// NOSPACE: the acting controller runs `etcdadm alarm recover`'s steps (a backup, compaction keeping
// the spec's margin and a running change log whole, every member defragmented, the disarm only when
// every member is well under its quota), recording each member's defrag and the outcome.
void Controller::recover_space(const Decision& d, const Observation& o) {
  SpaceRecoveryOptions opt;
  opt.connection = members_connection(o.hosts);
  opt.local_member_id = o.local.member_id;
  opt.quota_bytes = member_.quota_backend_bytes;
  opt.keep_revisions = o.auto_spec.nospace_keep_revisions;
  opt.headroom = o.auto_spec.nospace_disarm_below_percent / 100.0;
  opt.keep_from_revision = changelog::live_capture_revision(*store_, id_hex(o.cluster.info.cluster_id),
                                                            to_unix_micros(std::chrono::system_clock::now()));
  opt.backup = [&](EtcdClient& cluster) { return backup_through(d, options_.pre_change_backup_age, cluster); };
  opt.on_member = [&](const DefragMemberResult& r) { record_member_defrag(d, r); };
  SpaceRecoveryResult r;
  try {
    r = etcdadm::recover_space(opt);
  } catch (const Error& e) {
    record(step_name(d.step), d.reason, d.command, std::string("failed: ") + e.what());
    throw;
  }
  update_maintenance([&](MaintenanceRecord& m) {
    m.last_space_recovery = SpaceRecoveryRecord{unix_now(),         member_.name,
                                                opt.keep_revisions, r.revision,
                                                r.compacted_to,     r.largest_db_before,
                                                r.largest_db_after, r.quota,
                                                r.disarmed,         r.disarmed ? r.compaction_note : r.not_under_quota};
  });
  store_view_.reset();
  if (!r.disarmed) {
    record(step_name(d.step), d.reason, d.command, "failed: " + r.not_under_quota);
    throw Error(ErrorKind::kUnavailable, "NOSPACE stays armed: " + r.not_under_quota);
  }
  record(step_name(d.step), d.reason, d.command,
         fmt::format("done: compacted to {} ({}), the largest db file {} -> {} of a quota of {}, NOSPACE disarmed",
                     r.compacted_to, r.compaction_note, human_bytes(r.largest_db_before),
                     human_bytes(r.largest_db_after), human_bytes(r.quota)));
}

// Updates the maintenance record in the store (read-modify-write: the acting controller alone writes it).
void Controller::update_maintenance(const std::function<void(MaintenanceRecord&)>& change) {
  MaintenanceRecord maintenance;
  try {
    const RecordPolicy policy = record_policy();
    maintenance = read_maintenance(*store_, &policy);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt) throw;
    spdlog::warn("auto: rewriting the maintenance record: {}", e.what());
  }
  change(maintenance);
  ++maintenance.sequence;
  write_maintenance(*store_, maintenance, keyring_);
}

void Controller::record_member_defrag(const Decision& d, const DefragMemberResult& r) {
  update_maintenance([&](MaintenanceRecord& m) {
    m.defrags[r.id] = MemberDefrag{unix_now(), r.db_size_before, r.db_size_after, r.stalled.count()};
  });
  record("defrag", d.reason, d.command,
         fmt::format("done: member {} ({}){}: {} -> {}, its clients waited {} ms", r.name, id_hex(r.id),
                     r.led ? (r.leadership_moved_to.empty() ? ", the only voter"
                                                            : ", leadership moved to " + r.leadership_moved_to)
                           : "",
                     human_bytes(r.db_size_before), human_bytes(r.db_size_after), r.stalled.count()));
  failpoint("auto/defrag/member-done");
}

}  // namespace etcdadm

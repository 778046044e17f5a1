#include "restore/drill.h"

#include <spdlog/spdlog.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <thread>

#include "common/failpoint.h"
#include "common/fs.h"
#include "common/interrupt.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "etcd/client.h"
#include "etcd/datadir/bolt_reader.h"
#include "etcd/datadir/snapshot_inspect.h"
#include "etcd/etcd_version.h"
#include "restore/damage.h"
#include "restore/data_dir.h"
#include "restore/private_etcd.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void throw_if_cancelled(const std::atomic<bool>* cancel) {
  if (cancel != nullptr && cancel->load())
    throw Error(ErrorKind::kInterrupted, "backup drill cancelled (shutting down)");
}

// Room the drill needs besides the db itself: etcd's first WAL file (64 MiB, preallocated), an etcd
// binary extracted from the release cache, and a margin for the logs.
constexpr uint64_t kScratchOverhead = 192ull << 20;

void require_scratch_space(const std::string& dir, uint64_t db_bytes, bool db_size_known) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return;  // no answer: the writes will tell
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  const uint64_t need = db_bytes + kScratchOverhead;
  if (free_bytes < need) {
    throw Error(ErrorKind::kIo,
                "not enough space for the drill in " + dir + ": " + human_bytes(free_bytes) + " free, " +
                    human_bytes(need) + " needed (" + (db_size_known ? "the db" : "at least the stored backup") +
                    " plus 192 MiB for etcd's WAL)",
                "give a directory with room with --scratch-dir");
  }
}

DrillCheck check_equal(const std::string& name, int64_t expected, int64_t served) {
  DrillCheck c;
  c.name = name;
  c.expected = std::to_string(expected);
  c.served = std::to_string(served);
  c.passed = expected == served;
  return c;
}

// HashKV at the backup's revision against the source's. etcd hashes the revisions after its
// compaction point, so a member compacted further than the source was when it answered cannot
// compare; one compacted less (the source compacted between the snapshot and its HashKV) is
// compacted to the source's point first: the drill's member is its own to change.
DrillCheck check_hash(EtcdClient& client, const std::string& endpoint, const SourceHashKv& source) {
  DrillCheck c;
  c.name = "hashkv";
  c.expected = std::to_string(source.hash) + " at revision " + std::to_string(source.revision);
  auto served = client.hash_kv(endpoint, source.revision);
  if (served.compact_revision() < source.compact_revision && source.compact_revision <= source.revision) {
    client.compact(source.compact_revision, /*physical=*/true);
    c.note = "compacted to the source's compaction revision " + std::to_string(source.compact_revision) +
             " first (the source compacted after the snapshot)";
    served = client.hash_kv(endpoint, source.revision);
  }
  c.served = std::to_string(served.hash()) + " (compacted at " + std::to_string(served.compact_revision()) + ")";
  c.passed = served.hash() == source.hash && served.compact_revision() == source.compact_revision;
  if (!c.passed && served.compact_revision() != source.compact_revision) {
    c.note = "the source was compacted at " + std::to_string(source.compact_revision) + ", the restored member at " +
             std::to_string(served.compact_revision());
  }
  return c;
}

struct Phase {
  DrillReport& report;
  std::string name;
  Clock::time_point t0 = Clock::now();
  void done() { report.phases.push_back({name, seconds_since(t0)}); }
};

}  // namespace

DrillReport run_drill(const BackupStore& backups, const BackupRecord& listed, const DrillOptions& options) {
  BlobStore& store = *backups;
  InterruptibleWork interruptible;  // SIGINT/SIGTERM unwind: the member is stopped, the scratch removed
  DrillReport report;
  report.backup_name = listed.name;
  report.backup_etcd_version = listed.etcd_version;
  report.started_micros = to_unix_micros(std::chrono::system_clock::now());
  std::string phase = "prepare";
  try {
    // The metadata again: the catalog does not keep the recorded HashKV.
    BackupRecord backup = listed.format == "etcdadm" ? reload_backup_record(store, listed) : listed;
    ScratchDir scratch("etcdadm-drill", options.scratch_parent);
    const bool db_size_known = backup.db_size.has_value();
    require_scratch_space(scratch.path(), backup.db_size.value_or(backup.stored_size), db_size_known);
    make_dirs(scratch.path() + "/bin", 0700);
    report.etcd = find_local_etcd(backup.etcd_version, options.etcd_binary, options.cache_dir, scratch.path() + "/bin");
    spdlog::info("drilling backup {} (etcd {}) on etcd {} from {}", backup.name,
                 backup.etcd_version.empty() ? "of unknown version" : backup.etcd_version, report.etcd.version,
                 report.etcd.path);

    const std::string name = "drill-" + random_hex(4);
    RestoreOptions ro;
    ro.data_dir = scratch.path() + "/" + name + ".etcd";
    ro.name = name;
    // The peer URL recorded in the restored membership; the member listens where PrivateEtcd says.
    ro.initial_advertise_peer_urls = "http://127.0.0.1:2380";
    ro.initial_cluster_token = "etcdadm-drill-" + random_hex(6);
    ro.target_version = report.etcd.version;
    ro.point_in_time = options.point_in_time;
    // The backup's own revision: the drill compares the member's HashKV with the backup's, and no
    // client of the cluster ever sees this member.
    ro.method.kubernetes_bump = 0;
    phase = "fetch+verify";
    RestoreResult restored = restore_to_data_dir(backups, backup, ro);
    report.phases.push_back({"fetch+verify", restored.fetch_seconds});
    phase = "restore";
    Phase restore_phase{report, "restore"};
    // What the db holds, read before etcd opens it (etcd writes to it once running).
    const std::string db_path = ro.data_dir + "/member/snap/db";
    auto reader = BoltReader::open(db_path);
    SnapshotInspection held = inspect_snapshot(*reader);
    reader.reset();
    restore_phase.done();
    report.phases.back().seconds += restored.restore_seconds;

    phase = "start";
    Phase start_phase{report, "start"};
    throw_if_cancelled(options.cancel);
    SocketDir sockets(scratch.path());
    PrivateEtcd member("backup drill", report.etcd.path, ro.data_dir, name, scratch.path() + "/etcd.log",
                       sockets.path(), restored.db_size, options.cancel);
    member.start_and_wait(options.start_timeout);
    failpoint("drill/member/serving", options.cancel);
    start_phase.done();
    for (const auto& p : report.phases) report.rto_seconds += p.seconds;

    phase = "checks";
    Phase checks_phase{report, "checks"};
    ConnectionConfig cc;
    cc.endpoints = {member.client_url()};
    cc.command_timeout = std::chrono::seconds(60);  // HashKV walks the whole key bucket
    EtcdClient client(cc);
    const int64_t served_revision = client.status(member.client_url()).header().revision();
    DrillCheck revision = check_equal("revision", held.status.revision, served_revision);
    if (backup.revision && served_revision < *backup.revision) {
      revision.passed = false;
      revision.note = "below the backup's recorded revision " + std::to_string(*backup.revision);
    }
    if (restored.replay) {
      // The target the change log was replayed to is what the member must serve.
      DrillCheck reached = check_equal("point in time", restored.replay->revision, served_revision);
      reached.note = std::to_string(restored.replay->records) + " revisions replayed from the change log (" +
                     options.point_in_time.describe() + ")";
      report.checks.push_back(reached);
    }
    report.checks.push_back(revision);
    etcdserverpb::RangeRequest count;
    count.set_key("\0", 1);
    count.set_range_end("\0", 1);
    count.set_count_only(true);
    report.checks.push_back(check_equal("keys", static_cast<int64_t>(held.live_keys), client.range(count).count()));
    if (backup.source_hash) {
      report.checks.push_back(check_hash(client, member.client_url(), *backup.source_hash));
    } else {
      report.notes.push_back("no HashKV recorded with this backup (" +
                             std::string(backup.format == "etcdadm" ? "saved by an etcdadm before 0.2, or imported"
                                                                    : "written by " + backup.format) +
                             "): the served data was checked against the snapshot's own contents only");
    }
    checks_phase.done();
    phase.clear();
    // Stopped and removed before the report goes out: a passed drill leaves nothing running.
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInterrupted) throw;
    report.failure_kind = e.kind();
    report.failure = e.what();
    report.failure_hint = e.hint();
    report.failed_phase = phase;
    return report;
  }
  report.passed = true;
  std::string failed;
  for (const auto& c : report.checks) {
    if (c.passed) continue;
    failed += (failed.empty() ? "" : "; ") + c.name + ": expected " + c.expected + ", served " + c.served +
              (c.note.empty() ? "" : " (" + c.note + ")");
  }
  if (!failed.empty()) {
    report.passed = false;
    report.failure_kind = ErrorKind::kCorrupt;
    report.failure =
        "backup " + report.backup_name + " restored and started, but it does not serve what it should: " + failed;
    report.failure_hint =
        "do not rely on this backup; drill an older one (backup drill NAME), and check the source cluster";
  }
  return report;
}

nlohmann::json drill_report_json(const DrillReport& r) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases) phases.push_back({{"name", p.name}, {"seconds", p.seconds}});
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : r.checks) {
    nlohmann::json j{{"name", c.name}, {"expected", c.expected}, {"served", c.served}, {"passed", c.passed}};
    if (!c.note.empty()) j["note"] = c.note;
    checks.push_back(j);
  }
  nlohmann::json j{{"backup", r.backup_name},
                   {"passed", r.passed},
                   {"startedAt", format_rfc3339_micros(from_unix_micros(r.started_micros))},
                   {"backupEtcdVersion", r.backup_etcd_version},
                   {"phases", phases},
                   {"checks", checks},
                   {"notes", r.notes}};
  if (!r.etcd.path.empty()) j["etcd"] = {{"path", r.etcd.path}, {"version", r.etcd.version}, {"source", r.etcd.source}};
  if (r.rto_seconds > 0) j["rtoSeconds"] = r.rto_seconds;
  if (!r.passed) {
    j["failure"] = r.failure;
    if (!r.failed_phase.empty()) j["failedPhase"] = r.failed_phase;
    j["reason"] = error_kind_name(r.failure_kind);
  }
  return j;
}

DrillRecord drill_record_of(const DrillReport& r) {
  DrillRecord d;
  d.drilled_at_micros = r.started_micros;
  d.passed = r.passed;
  d.rto_seconds = r.rto_seconds;
  d.message = r.passed ? join_list(r.notes) : r.failure;
  d.drilled_by = etcdadm_on_this_host();
  d.etcd_version = r.etcd.version;
  return d;
}

void record_drill_result(BlobStore& store, Catalog* catalog, const BackupRecord& backup, const DrillReport& r) {
  DrillRecord d = drill_record_of(r);
  // A backup whose bytes failed a check is damaged, whatever drilled it; a failed start or check
  // is the drill's result only.
  if (catalog != nullptr && !r.passed && r.failure_kind == ErrorKind::kCorrupt && r.failed_phase == "fetch+verify") {
    record_damage(store, *catalog, backup, r.failure);
  }
  try {
    apply_store_settings(store);
    store.write_small(backup.name + "/" + kDrillResultFile, drill_result_json(d, drill_report_json(r).dump()),
                      /*overwrite=*/true);
  } catch (const Error& e) {
    spdlog::warn("the drill result of {} is recorded on this host only: cannot write it to {}: {}", backup.name,
                 store.url(), e.what());
  }
  if (catalog == nullptr) return;
  try {
    catalog->record_drill(store.url(), backup, d);
  } catch (const Error& e) {
    spdlog::warn("the drill result of {} is not in the catalog: {}", backup.name, e.what());
  }
}

}  // namespace etcdadm

#include "restore/data_dir.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

#include "common/error.h"
#include "common/failpoint.h"
#include "common/file_users.h"
#include "common/fs.h"
#include "common/interrupt.h"
#include "common/subprocess.h"
#include "common/text.h"
#include "etcd/datadir/snapshot_version.h"
#include "etcd/etcd_version.h"
#include "etcdadm/release/install.h"
#include "restore/fetch.h"
#include "restore/native_restore.h"
#include "restore/new_cluster.h"
#include "restore/snapshot_source.h"
#include "store/snapshot_digest.h"

extern char** environ;

namespace etcdadm {

namespace {

using Clock = std::chrono::steady_clock;

const char* const kStopTheMemberFirst =
    "stop that etcd first (systemctl stop etcd, or kill the PID shown), then run the restore again; "
    "--force replaces a data dir that is not empty, never one that is in use";

constexpr const char* kStagingLock = ".lock";

// Whether a staging directory's restore is over: its lock is free (or, from an etcdadm before the
// lock file, nothing in it changed for 10 minutes; or it is empty and 10 s old, killed before its
// lock existed) and no process (a restore tool whose parent died) holds a file in it.
bool staging_is_abandoned(const std::string& dir) {
  if (!processes_holding(dir).empty()) return false;
  std::string lock = dir + "/" + kStagingLock;
  int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return free;
  }
  std::error_code ec;
  // An empty dir without a lock: a restore killed between creating its staging dir and its lock
  // file, microseconds apart; after 10 s no live restore can still be in that gap.
  if (std::filesystem::is_empty(dir, ec) && !ec) {
    auto made = std::filesystem::last_write_time(dir, ec);
    return !ec && made <= std::filesystem::file_time_type::clock::now() - std::chrono::seconds(10);
  }
  ec.clear();
  auto quiet_since = std::filesystem::file_time_type::clock::now() - std::chrono::minutes(10);
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code tec;
    if (it->last_write_time(tec) > quiet_since) return false;
  }
  return !ec && std::filesystem::last_write_time(dir, ec) <= quiet_since && !ec;
}

void remove_abandoned_staging_dirs(const std::string& parent) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(parent, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind(kRestoreStagingPrefix, 0) != 0 || !e.is_directory(ec)) continue;
    if (!staging_is_abandoned(e.path().string())) continue;
    try {
      remove_all(e.path().string());
      spdlog::info("removed {} (left by an earlier restore that was killed)", e.path().string());
    } catch (const std::exception& err) {
      spdlog::warn("could not remove the abandoned staging directory {}: {}", e.path().string(), err.what());
    }
  }
}

void check_options(const RestoreOptions& o) {
  if (o.data_dir.empty()) throw Error(ErrorKind::kInvalidArgument, "no --data-dir given");
  if (o.name.empty()) throw Error(ErrorKind::kInvalidArgument, "no --name given");
  // etcd itself checks the rest; these are the mistakes worth catching before any work.
  std::string needle = o.name + "=";
  if (o.initial_cluster.find(needle) == std::string::npos) {
    throw Error(ErrorKind::kInvalidArgument,
                "--initial-cluster '" + o.initial_cluster + "' has no entry for --name " + o.name,
                "add " + o.name + "=<peer URL> to --initial-cluster");
  }
}

}  // namespace

StagingDir::StagingDir(const std::string& parent) : path_(parent + "/" + kRestoreStagingPrefix + random_suffix()) {
  make_dirs(path_, 0700);
  std::string lock = path_ + "/" + kStagingLock;
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) throw_errno("cannot lock", lock, errno);
}

StagingDir::~StagingDir() {
  try {
    // The lock file goes last: a restore killed while this runs leaves a dir whose free lock marks
    // it abandoned, never a non-empty one without a lock (which the next restore must leave alone
    // for 10 minutes, in case an older etcdadm is still using it).
    for (const auto& e : std::filesystem::directory_iterator(path_)) {
      if (e.path().filename() != kStagingLock) remove_all(e.path().string());
    }
    remove_all(path_);
  } catch (const std::exception& e) {
    spdlog::warn("could not remove staging directory {}: {}", path_, e.what());
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string resolved_data_dir(const std::string& data_dir) {
  std::string path = absolute_path(data_dir);
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode) || !is_directory(path)) return path;
  std::error_code ec;
  std::string target = std::filesystem::canonical(path, ec).string();
  if (ec) return path;
  spdlog::info("data dir {} is a link to {}: restoring into {}", path, target, target);
  return target;
}

std::string restore_staging_parent(const std::string& data_dir) {
  if (is_directory(data_dir) && is_filesystem_root(data_dir)) return data_dir;
  std::string parent = parent_dir(data_dir);
  make_dirs(parent);
  return parent;
}

RestoreTool find_restore_tool(const std::string& explicit_path) {
  RestoreTool tool;
  std::optional<std::string> path;
  if (!explicit_path.empty()) {
    path = find_executable(explicit_path);
    if (!path) throw Error(ErrorKind::kNotFound, "restore tool " + explicit_path + " not found or not executable");
  } else {
    path = find_executable("etcdutl");
    if (!path) path = find_executable("etcdctl");
    if (!path) {
      throw Error(ErrorKind::kNotFound, "neither etcdutl nor etcdctl is on PATH",
                  "install etcd's tools (Debian: apt-get install etcd-client) or pass --restore-tool");
    }
  }
  tool.path = *path;
  tool.is_etcdutl = std::filesystem::path(tool.path).filename().string().find("etcdutl") != std::string::npos;
  RunOptions ro;  // no ETCDCTL_API: 3.4's etcdctl defaults to v3, 3.5+ would warn about it
  ro.timeout = std::chrono::seconds(10);
  auto r = run_process({tool.path, "version"}, ro);
  if (r.exit_code != 0) {
    throw Error(ErrorKind::kExternalTool, tool.path + " version failed: " + r.output,
                "check the etcd tools installation");
  }
  // "etcdctl version: 3.4.23" / "etcdutl version: 3.5.9"
  auto pos = r.output.find("version: ");
  if (pos != std::string::npos) {
    tool.version = r.output.substr(pos + 9, r.output.find('\n', pos) - pos - 9);
  }
  return tool;
}

namespace {

// What every restore checks and decides before touching anything.
struct PreparedRestore {
  RestoreOptions options;
  std::string data_dir;        // absolute, symlinks resolved
  std::string staging_parent;  // where the staging directory goes (on data_dir's filesystem)
  // The data dir is a filesystem root: staged and swapped inside it (restore_staging_parent).
  bool inside_data_dir = false;
  bool native = true;
  RestoreTool tool;        // when !native
  NativeRestorePlan plan;  // when native
  // The etcd the restored member will run: --target-version, else the tool's own version (a
  // native restore: else the snapshot's); nullopt when not known yet.
  std::optional<EtcdVersion> target;
};

std::vector<std::string> sorted_urls(const std::string& list) {
  std::vector<std::string> urls = split_list(list);
  std::sort(urls.begin(), urls.end());
  return urls;
}

// The new cluster, checked as etcd's restore checks it (etcd's VerifyBootstrap): the member is in
// --initial-cluster with exactly its --initial-advertise-peer-urls. etcd would also accept URLs
// that differ but resolve to the same addresses; etcdadm compares them as written.
NativeRestorePlan native_plan(const RestoreOptions& o) {
  NativeRestorePlan plan;
  plan.cluster = plan_new_cluster(o.initial_cluster, o.initial_cluster_token);
  plan.member_name = o.name;
  const NewMember& me = plan.cluster.member(o.name);
  if (sorted_urls(o.initial_advertise_peer_urls) != me.peer_urls) {
    std::string theirs;
    for (const std::string& u : me.peer_urls) theirs += (theirs.empty() ? "" : ",") + u;
    throw Error(ErrorKind::kInvalidArgument,
                "--initial-cluster has " + o.name + "=" + theirs + " but --initial-advertise-peer-urls is " +
                    o.initial_advertise_peer_urls,
                "give the member the same peer URLs in both flags");
  }
  plan.bump_revision = o.method.bump_revision;
  plan.mark_compacted = o.method.mark_compacted;
  return plan;
}

// Whether etcd's restore tool knows --bump-revision/--mark-compacted (backported to some 3.4 and
// 3.5 patch releases): its own help says.
bool tool_can_bump(const RestoreTool& tool) {
  RunOptions ro;
  ro.timeout = std::chrono::seconds(10);
  if (wants_etcdctl_api_variable(tool.version)) ro.env["ETCDCTL_API"] = "3";
  auto r = run_process({tool.path, "snapshot", "restore", "--help"}, ro);
  return r.output.find("--bump-revision") != std::string::npos &&
         r.output.find("--mark-compacted") != std::string::npos;
}

PreparedRestore prepare_restore(const RestoreOptions& in) {
  PreparedRestore p;
  p.options = in;
  RestoreOptions& o = p.options;
  if (o.initial_cluster.empty()) {
    std::string first_url = o.initial_advertise_peer_urls.substr(0, o.initial_advertise_peer_urls.find(','));
    o.initial_cluster = o.name + "=" + first_url;
  }
  check_options(o);
  const std::string& with = o.method.restore_with;
  if (!with.empty() && with != "native" && with != "etcdutl" && with != "etcdctl") {
    throw Error(ErrorKind::kInvalidArgument, "--restore-with " + with + ": expected native, etcdutl or etcdctl");
  }
  check_revision_flags(o.method);
  if (with == "native" && !o.restore_tool.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "--restore-tool goes with --restore-with etcdutl|etcdctl, not native");
  }
  p.native = o.method.native() && o.restore_tool.empty();
  if (!p.native && o.point_in_time.given()) {
    throw Error(ErrorKind::kInvalidArgument,
                "a point-in-time restore is native: etcd's tools cannot replay the change log",
                "drop --restore-with / --restore-tool");
  }
  p.data_dir = resolved_data_dir(o.data_dir);
  p.inside_data_dir = is_directory(p.data_dir) && is_filesystem_root(p.data_dir);
  // Restores' staging dirs (this one's own prefetch among them) live inside such a data dir: they
  // are not the member's files.
  refuse_if_in_use(p.data_dir, "restore into", kStopTheMemberFirst, p.inside_data_dir ? kRestoreStagingPrefix : "");
  // Before the emptiness check: a file is no data dir, and --force (which that check suggests)
  // would not make it one.
  if (path_exists(p.data_dir) && !is_directory(p.data_dir)) {
    throw Error(ErrorKind::kAlreadyExists, "data dir " + p.data_dir + " exists and is not a directory",
                "give the path of a directory: a new one, or an etcd data dir to replace with --force");
  }
  p.staging_parent = restore_staging_parent(p.data_dir);
  require_writable_dir(p.staging_parent, "restore into " + p.data_dir);
  if (!is_empty_data_dir(p.data_dir) && !o.force) {
    throw Error(ErrorKind::kAlreadyExists, "data dir " + p.data_dir + " is not empty",
                "restore into a new directory, or pass --force to replace it (its contents are deleted)");
  }
  if (p.native) {
    p.plan = native_plan(o);
    p.target = EtcdVersion::parse(o.target_version);
    if (o.target_version.empty()) {
      // The etcd on this host is the one that will start on the data dir: restore for it (and refuse
      // what it cannot start on) rather than for whatever version the snapshot came from.
      if (auto etcd = find_executable("etcd")) {
        try {
          p.target = EtcdVersion::parse(binary_version(*etcd));
        } catch (const Error& e) {
          spdlog::warn("cannot tell the version of {} ({}): restoring for the snapshot's etcd", *etcd, e.what());
        }
        if (p.target)
          spdlog::info("restoring for etcd {} ({}; --target-version to choose another)", p.target->str(), *etcd);
      }
    }
    if (p.target && !native_restore_verified(*p.target)) {
      throw Error(ErrorKind::kInvalidArgument,
                  "the native restore writes data dirs for etcd " + native_restore_verified_versions() +
                      " (verified by etcdadm's tests), not for etcd " + p.target->str(),
                  "restore with etcd's own tool: --restore-with etcdutl (etcdutl " + p.target->minor_str() +
                      " on PATH, or --restore-tool PATH)");
    }
  } else {
    p.tool = find_restore_tool(o.restore_tool.empty() ? with : o.restore_tool);
    p.target = EtcdVersion::parse(o.target_version.empty() ? p.tool.version : o.target_version);
    if (!p.target) {
      spdlog::warn(
          "cannot tell which etcd the restored member will run ({} reports version '{}'): "
          "the cross-version check is skipped",
          p.tool.path, p.tool.version);
    }
    if (o.method.bump_revision > 0 && !tool_can_bump(p.tool)) {
      throw Error(
          ErrorKind::kInvalidArgument,
          p.tool.path + " " + p.tool.version + " has no --bump-revision (etcd added it in later patch releases)",
          "drop --restore-with: the native restore bumps the revision for every etcd it writes for");
    }
  }
  remove_abandoned_staging_dirs(p.staging_parent);
  return p;
}

// Refuses (kInvalidArgument) a restore that etcd does not support across the snapshot's, the
// tool's and the target's versions.
void check_versions(const PreparedRestore& p, const std::string& snapshot) {
  if (!p.target) return;
  if (auto origin = snapshot_origin(snapshot, p.options.snapshot_etcd_version)) {
    check_restore_target(*origin, *p.target, p.tool.version);
  }
}

void refuse_unverified_snapshot(const SnapshotOrigin& origin) {
  if (native_restore_verified(origin.version)) return;
  throw Error(ErrorKind::kInvalidArgument,
              "the native restore is verified for snapshots of etcd " + native_restore_verified_versions() +
                  "; this one is from etcd " + origin.version.minor_str() + " (" + origin.evidence + ")",
              "restore with etcd's own tool: --restore-with etcdutl (etcdutl " + origin.version.minor_str() +
                  " on PATH, or --restore-tool PATH)");
}

// Before a fetch: a backup whose metadata already names an etcd the native restore does not
// know is refused without reading it.
void refuse_unverified_recorded_version(const std::string& recorded) {
  if (auto v = EtcdVersion::parse(recorded))
    refuse_unverified_snapshot({*v, "etcd " + recorded + " recorded in the backup metadata"});
}

// The etcd version whose restore output the native restore writes for `db`: the target's, else
// the snapshot's. Refuses snapshots of versions the native restore is not verified for, naming the
// way that still works.
EtcdVersion native_flavor(const PreparedRestore& p, const std::string& db) {
  auto origin = snapshot_origin(db, p.options.snapshot_etcd_version);
  if (!origin) return p.target.value_or(EtcdVersion{3, 5, 0});  // unreadable: the writer says why
  refuse_unverified_snapshot(*origin);
  EtcdVersion target = p.target.value_or(origin->version);
  check_restore_target(*origin, target, /*tool_version=*/"");
  return target;
}

// Puts `from` at `to`. An existing `to` is exchanged with it in one atomic step (the old entry
// ends at `from`, inside the staging dir, and goes with it); filesystems without RENAME_EXCHANGE
// get two renames, the old entry moved to `aside` and put back if the second fails.
void move_into_place(const std::string& from, const std::string& to, const std::string& aside) {
  if (!path_exists(to)) {
    if (::rename(from.c_str(), to.c_str()) != 0) throw_errno("cannot move restored data into", to, errno);
    return;
  }
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) return;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) throw_errno("cannot swap in", to, errno);
  if (::rename(to.c_str(), aside.c_str()) != 0) throw_errno("cannot move aside", to, errno);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    int err = errno;
    ::rename(aside.c_str(), to.c_str());  // put the old one back
    throw_errno("cannot move restored data into", to, err);
  }
}

// A data dir that is a filesystem root cannot be renamed, so its entries are: what the old data
// dir held besides the restore's entries (with --force) goes into the staging dir first, then the
// restored entries come in, `member` last. etcd's data is `member/`, and that one exchange is the
// commit: at every instant the data dir holds the old member or the new one. lost+found and other
// restores' staging dirs stay where they are.
void swap_inside_filesystem_root(const PreparedRestore& p, const std::string& restored, const std::string& staging) {
  const std::string& data_dir = p.data_dir;
  std::string aside = staging + "/old";
  make_dirs(aside, 0700);
  std::vector<std::string> incoming;
  for (const auto& e : std::filesystem::directory_iterator(restored)) incoming.push_back(e.path().filename().string());
  std::stable_partition(incoming.begin(), incoming.end(), [](const std::string& n) { return n != "member"; });
  for (const auto& e : std::filesystem::directory_iterator(data_dir)) {
    std::string name = e.path().filename().string();
    if (kept_at_filesystem_root(name)) continue;
    if (std::find(incoming.begin(), incoming.end(), name) != incoming.end()) continue;  // exchanged below
    if (::rename(e.path().c_str(), (aside + "/" + name).c_str()) != 0)
      throw_errno("cannot move aside", e.path().string(), errno);
  }
  // What renaming a restored dir into place would have given it: the data dir holds every Secret.
  if (::chmod(data_dir.c_str(), 0700) != 0) {
    spdlog::warn("cannot make {} owner-only ({}): etcd warns about a data dir others can read", data_dir,
                 std::strerror(errno));
  }
  for (const std::string& name : incoming) {
    move_into_place(restored + "/" + name, data_dir + "/" + name, aside + "/" + name + ".old");
  }
  failpoint("restore/swap/renamed");
  fsync_dir(data_dir);
}

// Moves the finished data dir `restored` (inside `staging`) into place: one atomic exchange with
// an existing directory (empty, or non-empty with --force), or, for a data dir that is a
// filesystem root, an exchange of its entries.
void swap_into_place(const PreparedRestore& p, const std::string& restored, const std::string& staging) {
  // Checked again: a member may have been started on it while the restore ran.
  refuse_if_in_use(p.data_dir, "replace", kStopTheMemberFirst, p.inside_data_dir ? kRestoreStagingPrefix : "");
  if (p.inside_data_dir) {
    swap_inside_filesystem_root(p, restored, staging);
    return;
  }
  move_into_place(restored, p.data_dir, staging + "/old");
  failpoint("restore/swap/renamed");
  fsync_dir(p.staging_parent);
}

// Writes the verified snapshot to the path it is given and returns its db size (trailer excluded).
using PlaceSnapshot = std::function<uint64_t(const std::string& db_path)>;

// Changes the placed snapshot before the member's files are written (the point-in-time replay);
// returns the db's bytes afterwards.
using ExtendSnapshot = std::function<uint64_t(const std::string& db_path, uint64_t db_bytes)>;

// What a restore did to the revision, for people (nothing when the rule was off and nothing asked:
// a drill's): a kept Kubernetes revision is a warning.
void log_revision_bump(const RestoreMethod& method, const RevisionBump& bump) {
  if (bump.reason == RevisionBump::Reason::kNone && !needs_kubernetes_check(method)) return;
  if (bump.reason == RevisionBump::Reason::kKept) {
    spdlog::warn("{}", bump.explanation());
  } else {
    spdlog::info("{}", bump.explanation());
  }
}

// The native restore into <staging>/data, then swapped into place.
void restore_natively(const PreparedRestore& p, const PlaceSnapshot& place, const std::string& staging,
                      RestoreResult& result, const ExtendSnapshot& extend = nullptr) {
  auto t1 = Clock::now();
  std::string restored = staging + "/data";
  NativeDataDirWriter writer(restored, p.plan);
  uint64_t db_bytes = place(writer.db_path());
  failpoint("restore/native/placed");
  EtcdVersion flavor = native_flavor(p, writer.db_path());
  throw_if_interrupted("restore into " + p.data_dir);
  if (extend) db_bytes = extend(writer.db_path(), db_bytes);
  throw_if_interrupted("restore into " + p.data_dir);
  // Read after the replay: what the member will serve decides, the change log's keys included.
  const RestoreMethod& method = p.options.method;
  result.revision_bump =
      decide_revision_bump(method, needs_kubernetes_check(method) && holds_kubernetes_keys(writer.db_path(), db_bytes));
  writer.set_revision_bump(result.revision_bump.by, result.revision_bump.mark_compacted);
  NativeRestoreResult r = writer.finish(db_bytes, flavor);
  failpoint("restore/native/written");
  throw_if_interrupted("restore into " + p.data_dir);
  swap_into_place(p, restored, staging);
  result.data_dir = p.data_dir;
  result.native = true;
  result.flavor = flavor.str();
  result.member_id = r.member_id;
  result.cluster_id = r.cluster_id;
  result.snapshot_revision = r.snapshot_revision;
  result.revision = r.revision;
  result.restore_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  spdlog::info(
      "wrote {} natively for etcd {}: member {} of cluster {}, revision {}{}", p.data_dir, result.flavor,
      id_hex(r.member_id), id_hex(r.cluster_id), r.revision,
      r.revision != r.snapshot_revision ? " (from the snapshot's " + std::to_string(r.snapshot_revision) + ")" : "");
  log_revision_bump(method, result.revision_bump);
}

// Runs the restore tool on a verified snapshot into <staging>/data, then swaps that into place.
// `snapshot_verified`: its SHA-256 was checked by us, so the tool's own (slower) check is skipped.
void restore_with_tool(const PreparedRestore& p, const std::string& snapshot, uint64_t db_bytes, bool snapshot_verified,
                       const std::string& staging, RestoreResult& result) {
  const RestoreOptions& o = p.options;
  check_versions(p, snapshot);
  const RevisionBump bump =
      decide_revision_bump(o.method, needs_kubernetes_check(o.method) && holds_kubernetes_keys(snapshot, db_bytes));
  if (bump.reason == RevisionBump::Reason::kKubernetes && !tool_can_bump(p.tool)) {
    throw Error(ErrorKind::kInvalidArgument,
                p.tool.path + " " + p.tool.version +
                    " cannot bump the revision, and the snapshot holds Kubernetes' keys (" + kKubernetesKeyPrefix +
                    "): a restore of them moves the revision forward by default (docs/operations.md)",
                "drop --restore-with (the native restore bumps the revision for every etcd it writes for), or add "
                "--keep-revision to restore it at its own revision");
  }
  auto t1 = Clock::now();
  std::string restored = staging + "/data";
  std::vector<std::string> argv = {p.tool.path,
                                   "snapshot",
                                   "restore",
                                   snapshot,
                                   "--data-dir=" + restored,
                                   "--name=" + o.name,
                                   "--initial-cluster=" + o.initial_cluster,
                                   "--initial-cluster-token=" + o.initial_cluster_token,
                                   "--initial-advertise-peer-urls=" + o.initial_advertise_peer_urls};
  // The SHA-256 of exactly these bytes was checked by us (hardware SHA, one pass). The tool's own
  // check would read all of them again (etcd 3.4's Go SHA-256 has no SHA-NI: ~1 s per 400 MB), so
  // it is skipped; the tool still strips the trailer. See docs/architecture.md.
  if (snapshot_verified) argv.push_back("--skip-hash-check");
  if (bump.by > 0) {
    argv.push_back("--bump-revision=" + std::to_string(bump.by));
    argv.push_back("--mark-compacted");
  }
  RunOptions ro;
  ro.cancel = interrupt_requested();
  // etcdctl refuses a flag that is also set through its ETCDCTL_* variable: clear them all.
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    if (kv.rfind("ETCDCTL_", 0) == 0) ro.unset_env.push_back(kv.substr(0, kv.find('=')));
  }
  if (wants_etcdctl_api_variable(p.tool.version)) ro.env["ETCDCTL_API"] = "3";
  spdlog::info("restoring with {} {}", p.tool.path, p.tool.version);
  ProcessResult pr = run_process(argv, ro);
  throw_if_interrupted("restore into " + p.data_dir);
  if (pr.exit_code != 0) {
    throw Error(ErrorKind::kExternalTool,
                p.tool.path + " snapshot restore failed (exit " + std::to_string(pr.exit_code) + "): " + pr.output,
                "the data dir was left untouched; check the member flags (--name, --initial-cluster, "
                "--initial-advertise-peer-urls)");
  }
  if (!is_directory(restored + "/member")) {
    throw Error(ErrorKind::kExternalTool, p.tool.path + " reported success but wrote no member directory");
  }
  // etcd writes its files 0600 and directories 0700, but etcdctl 3.4 writes the raft snapshot
  // file through the umask (0666 under umask 0). The data dir holds every Secret: owner only.
  // (And etcd warns about (3.4) or refuses (3.5+) a data dir wider than 0700.)
  remove_group_and_other_access(restored);
  ::chmod(restored.c_str(), 0700);
  swap_into_place(p, restored, staging);
  result.data_dir = p.data_dir;
  result.tool = p.tool;
  result.revision_bump = bump;
  log_revision_bump(o.method, bump);
  result.restore_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
}

// A snapshot file already verified by us, into the restore's data dir: moved when it is ours to
// consume (a prefetched scratch copy on the same filesystem), else copied (the native restore
// changes the db in place; the user's file stays as it was).
uint64_t place_snapshot(const std::string& snapshot_file, uint64_t db_bytes, bool consume, const std::string& db_path) {
  if (consume && ::rename(snapshot_file.c_str(), db_path.c_str()) == 0) return db_bytes;
  std::filesystem::copy_file(snapshot_file, db_path);
  // copy_file gives the copy the source's mode (a 0444 or 0644 file): the db is the member's,
  // owner-only and writable.
  if (::chmod(db_path.c_str(), 0600) != 0) throw_errno("cannot chmod", db_path, errno);
  return db_bytes;
}

}  // namespace

RestoreResult restore_to_data_dir(const BackupStore& backups, const BackupRecord& backup, const RestoreOptions& in) {
  InterruptibleWork interruptible;  // the staging directory goes with the unwinding
  PreparedRestore p = prepare_restore(in);
  if (p.options.snapshot_etcd_version.empty()) p.options.snapshot_etcd_version = backup.etcd_version;
  if (p.target) refuse_newer_recorded_version(p.options.snapshot_etcd_version, *p.target);
  if (p.native) refuse_unverified_recorded_version(p.options.snapshot_etcd_version);
  StagingDir staging(p.staging_parent);

  RestoreResult result;
  result.backup_name = backup.name;
  auto fetch = [&](const std::string& path) {
    auto t0 = Clock::now();
    // Not synced here: the native restore syncs the db with its own commit; a tool reads it once.
    FetchResult fetched = fetch_verified(backups, backup, path, /*overwrite=*/false, /*durable=*/false);
    result.db_size = fetched.digest.db_bytes;
    result.fetch_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    spdlog::info("backup {} verified ({} bytes db, SHA-256 {}) in {:.2f}s", backup.name, fetched.digest.db_bytes,
                 fetched.digest.db_sha256, result.fetch_seconds);
    return fetched.digest.db_bytes;
  };
  if (p.native) {
    // Straight into the new data dir: the verified snapshot becomes member/snap/db, no copy.
    ExtendSnapshot replay;
    if (p.options.point_in_time.given()) {
      replay = [&](const std::string& db_path, uint64_t db_bytes) {
        result.replay = replay_to(backups, backup, db_path, db_bytes, p.options.point_in_time);
        return uint64_t{0};
      };
    }
    restore_natively(p, fetch, staging.path(), result, replay);
    result.restore_seconds -= result.fetch_seconds;
    return result;
  }

  // A scratch copy in our private staging dir, read once by the restore tool and deleted.
  std::string snapshot = staging.path() + "/snapshot.db";
  uint64_t db_bytes = fetch(snapshot);
  restore_with_tool(p, snapshot, db_bytes, /*snapshot_verified=*/true, staging.path(), result);
  return result;
}

RestoreResult restore_verified_snapshot_file(const std::string& snapshot_file, uint64_t db_bytes,
                                             const RestoreOptions& in, bool consume) {
  InterruptibleWork interruptible;
  PreparedRestore p = prepare_restore(in);
  RestoreResult result;
  result.backup_name = snapshot_file;
  result.db_size = db_bytes;
  StagingDir staging(p.staging_parent);
  if (p.native) {
    restore_natively(
        p, [&](const std::string& db) { return place_snapshot(snapshot_file, db_bytes, consume, db); }, staging.path(),
        result);
  } else {
    restore_with_tool(p, snapshot_file, db_bytes, /*snapshot_verified=*/true, staging.path(), result);
  }
  return result;
}

RestoreResult restore_snapshot_file(const std::string& snapshot_file, const RestoreOptions& in, bool skip_hash_check) {
  auto t0 = Clock::now();
  SnapshotDigest digest = digest_snapshot_file(snapshot_file);
  // A db copied out of a data dir has no trailer: acceptable only when the user says so, like
  // etcdctl's --skip-hash-check.
  require_intact_snapshot(digest, snapshot_file, /*allow_missing_trailer=*/skip_hash_check);
  double checked = std::chrono::duration<double>(Clock::now() - t0).count();
  spdlog::info("snapshot {} checked ({} bytes db{}) in {:.2f}s", snapshot_file, digest.db_bytes,
               digest.has_trailer ? ", SHA-256 trailer matches" : ", no trailer", checked);
  RestoreResult result = restore_verified_snapshot_file(snapshot_file, digest.db_bytes, in);
  result.fetch_seconds = checked;
  return result;
}

}  // namespace etcdadm

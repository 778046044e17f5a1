#include "etcdadm/upgrade/upgrade.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error.h"
#include "common/failpoint.h"
#include "common/fs.h"
#include "common/http_client.h"
#include "common/timefmt.h"
#include "etcd/datadir/raft_files.h"
#include "etcdadm/init_system.h"
#include "etcdadm/maintenance/alarms.h"
#include "etcdadm/member_health.h"
#include "etcdadm/release/install.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

const std::vector<Phase> kUpgradePhases = {
    {"preflight", "check the cluster's health, etcd's version rules and that the cluster can lose this member"},
    {"backup", "take a backup of the cluster into the store (or find a recent one there)"},
    {"install", "install the target release beside the current one (kept for the rollback)"},
    {"downgrade", "a downgrade only: enable etcd's downgrade and wait for this member's storage version"},
    {"leadership", "move leadership to another healthy voter when this member leads"},
    {"switch", "put the target's binaries in place, rewrite the member's config and restart etcd"},
    {"health", "wait until the member is healthy, runs the target version and has caught up"},
};

// What <config-dir>/upgrade.json records: the change under way (or the last one done).
struct ChangeState {
  std::string from;
  std::string to;
  std::string kind;    // version_step_name
  std::string status;  // "in-progress" | "done"
  std::string phase;   // the phase running (or last run): where an interrupted run stopped
  std::string backup;
  std::string started_at;
  bool in_progress() const { return status == "in-progress"; }
};

std::optional<ChangeState> load_state(const MemberConfig& m) {
  const std::string path = upgrade_state_file(m);
  if (!path_exists(path)) return std::nullopt;
  try {
    auto j = nlohmann::json::parse(read_file(path));
    ChangeState s;
    s.from = j.at("from").get<std::string>();
    s.to = j.at("to").get<std::string>();
    s.kind = j.value("kind", "");
    s.status = j.value("status", "");
    s.phase = j.value("phase", "");
    s.backup = j.value("backup", "");
    s.started_at = j.value("startedAt", "");
    return s;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kCorrupt, path + " is unreadable: " + e.what(),
                "it records an upgrade of this member; check the member's version with `etcdadm info`, then remove "
                "the file and run the command again");
  }
}

void save_state(const MemberConfig& m, const ChangeState& s) {
  nlohmann::json j = {{"from", s.from},   {"to", s.to},         {"kind", s.kind},           {"status", s.status},
                      {"phase", s.phase}, {"backup", s.backup}, {"startedAt", s.started_at}};
  make_dirs(m.config_dir);
  write_file_atomic(upgrade_state_file(m), j.dump(2) + "\n", 0600, /*overwrite=*/true);
}

EtcdVersion parse_version_or_throw(const std::string& text, const std::string& what) {
  auto v = EtcdVersion::parse(text);
  if (!v) throw Error(ErrorKind::kInvalidArgument, what + " '" + text + "' is not an etcd version");
  return *v;
}

std::string label(const MemberInfo& x) { return x.name.empty() ? fmt::format("{:x}", x.id) : x.name; }

std::vector<std::string> healthy_client_urls(const ClusterInfo& info) {
  std::vector<std::string> urls;
  for (const auto& x : info.members) {
    if (!member_healthy(x) || x.learner) continue;
    for (const auto& u : x.client_urls) urls.push_back(u);
  }
  return urls;
}

bool binary_present(const std::string& dir) { return path_exists(dir + "/etcd") && path_exists(dir + "/etcdctl"); }

// The version the binaries in `dir` report, "" when there are none or they do not run.
std::string version_in(const std::string& dir) {
  if (!binary_present(dir)) return "";
  try {
    return binary_version(dir + "/etcd");
  } catch (const Error&) {
    return "";
  }
}

class VersionChange {
 public:
  VersionChange(const UpgradeOptions& o, bool rollback)
      : o_(o), m_(o_.member), rollback_(rollback), init_system_(make_init_system(m_.init_system)) {}

  UpgradeResult run(const std::string& only) {
    if (!only.empty()) check_phase_name(kUpgradePhases, only);
    // One change of a member at a time: two runs on one host would switch binaries under each other.
    make_dirs(m_.config_dir);
    ExclusiveLock lock(m_.config_dir + "/upgrade.lock", "another etcdadm upgrade of member " + m_.name + " is running");
    // Every phase needs what preflight finds out (the step, the survey), so it always runs; on
    // its own it only checks.
    spdlog::info("[preflight] {}", kUpgradePhases[0].description);
    preflight();
    result_.phases_run.push_back("preflight");
    if (nothing_to_do_) return result_;
    for (const auto& p : kUpgradePhases) {
      if (p.name == "preflight" || (!only.empty() && p.name != only)) continue;
      if (p.name == "downgrade" && step_.kind != VersionStepKind::kDowngrade) continue;
      if (p.name == "backup" && rollback_) continue;  // going back to what ran before needs no new backup
      spdlog::info("[{}] {}", p.name, p.description);
      state_->phase = p.name;
      save_state(m_, *state_);
      failpoint(("upgrade/" + p.name).c_str());
      run_phase(p.name);
      result_.phases_run.push_back(p.name);
    }
    return result_;
  }

 private:
  void run_phase(const std::string& name) {
    if (name == "backup") return backup();
    if (name == "install") return install();
    if (name == "downgrade") return downgrade();
    if (name == "leadership") return leadership();
    if (name == "switch") return switch_binaries();
    if (name == "health") return health();
    throw Error(ErrorKind::kInternal, "phase " + name + " has no implementation");
  }

  void check(const std::string& line) {
    spdlog::info("checked: {}", line);
    result_.checks.push_back(line);
  }

  void preflight() {
    target_ = normalise_version(o_.release.version);
    EtcdVersion target = parse_version_or_throw(target_, "--version");
    state_ = load_state(m_);
    // A rollback supersedes the upgrade it goes back from, finished or not.
    const bool interrupted = state_ && state_->in_progress();
    const bool recorded = state_.has_value();
    if (rollback_ && state_ && state_->kind != "rollback") state_.reset();
    if (state_ && state_->in_progress() && state_->to != target_) {
      throw Error(ErrorKind::kInvalidArgument,
                  "a " + state_->kind + " of member " + m_.name + " from " + state_->from + " to " + state_->to +
                      " stopped part way",
                  "finish it first: etcdadm upgrade apply --version " + state_->to +
                      (state_->kind == "rollback" ? "" : " (or etcdadm upgrade rollback)"));
    }
    const bool resuming = state_ && state_->in_progress() && state_->to == target_;

    survey_ = survey_cluster(m_, o_.endpoints);
    const MemberInfo* me = find_member_by_peer_url(survey_.info, m_.peer_url());
    if (me == nullptr) {
      throw Error(ErrorKind::kNotFound, "member " + m_.name + " (" + m_.peer_url() + ") is not in the cluster",
                  "etcdadm info shows the members; a removed member joins again with etcdadm join");
    }
    local_id_ = me->id;
    // What the member runs: its own answer; when it is down part way through a change, what the
    // binary on disk says.
    std::string running = me->reachable ? me->version : "";
    if (running.empty()) {
      if (!resuming && !(rollback_ && recorded)) {
        throw Error(ErrorKind::kUnavailable, "member " + m_.name + " does not answer (" + me->status_error + ")",
                    "start it (" + member_log_hint(m_) +
                        ") and run this again; for a dead host: etcdadm join --replace " + m_.name +
                        " on its replacement");
      }
      running = version_in(m_.install_dir);
      if (running.empty() && state_) running = state_->from;
      if (running.empty()) throw Error(ErrorKind::kNotFound, "no etcd binary in " + m_.install_dir);
      spdlog::info("member {} is down part way through a change of its version: going on", m_.name);
    }
    from_ = resuming ? state_->from : running;

    // The rest of the cluster must be whole: every other member answers, without alarms.
    for (const auto& x : survey_.info.members) {
      if (x.id == local_id_) continue;
      if (x.learner) {
        throw Error(ErrorKind::kUnavailable,
                    "member " + label(x) + " is a learner still catching up (a join under way)",
                    "wait until the join has finished (etcdadm info), or remove the abandoned learner");
      }
      if (!member_healthy(x)) {
        throw Error(ErrorKind::kUnavailable,
                    "member " + label(x) + " is not healthy (" +
                        (x.reachable ? (x.errors.empty() ? std::string("?") : x.errors.front()) : x.status_error) +
                        "): nothing was changed",
                    "every member must be healthy before one is restarted; a dead member is replaced with etcdadm "
                    "join --replace, or removed with etcdadm member remove");
      }
    }
    for (const auto& a : survey_.alarms) {
      throw Error(ErrorKind::kUnavailable, "the cluster has an alarm: " + a + ": nothing was changed",
                  "clear its cause first (NOSPACE: compact and defragment, then etcdctl alarm disarm)");
    }
    if (survey_.info.leader_id == 0) {
      throw Error(ErrorKind::kUnavailable, "the cluster has no leader: nothing was changed",
                  "check the members with etcdadm info");
    }
    if (!survey_.cluster_version) {
      throw Error(ErrorKind::kUnavailable, "no member told the cluster version (/version)", "check etcdadm info");
    }
    check(fmt::format("{} members healthy, leader {:x}, cluster version {}", survey_.info.members.size(),
                      survey_.info.leader_id, survey_.cluster_version->minor_str()));

    if (rollback_ && survey_.downgrade_target) {
      // A rollback puts one member's binary back; it does not undo etcd's downgrade.
      throw Error(ErrorKind::kInvalidArgument,
                  "etcd's downgrade to " + survey_.downgrade_target->minor_str() +
                      " is enabled: a rollback of this member does not undo it; nothing was changed",
                  "etcd's way back: `etcdctl downgrade cancel`, then etcdadm upgrade apply --version <the version "
                  "before> on each member already downgraded; or finish the downgrade with etcdadm upgrade apply "
                  "--version " +
                      target_ + " on the members still to go");
    }
    VersionStepInput in;
    in.member = parse_version_or_throw(running, "the member's version");
    in.target = target;
    in.cluster = *survey_.cluster_version;
    for (const auto& x : survey_.info.members) {
      if (x.id == local_id_) {
        in.members.push_back(in.member);
      } else if (auto v = EtcdVersion::parse(x.version)) {
        in.members.push_back(*v);
      }
    }
    in.downgrade = survey_.downgrade_target;
    step_ = check_version_step(in);
    if (!step_.allowed) {
      throw Error(ErrorKind::kInvalidArgument,
                  "etcd " + running + " -> " + target_ + ": " + step_.reason + ": nothing was changed",
                  step_.supported_path);
    }
    if (rollback_ && step_.kind != VersionStepKind::kRollback && step_.kind != VersionStepKind::kPatch &&
        step_.kind != VersionStepKind::kSame) {
      throw Error(ErrorKind::kInvalidArgument,
                  "going back from " + running + " to " + target_ + " is a " + version_step_name(step_.kind) +
                      " now, not a rollback: nothing was changed",
                  "etcdadm upgrade apply --version " + target_ + " (as etcd allows it now)");
    }
    check("etcd " + running + " -> " + target_ + ": " + version_step_name(step_.kind) + " allowed (cluster version " +
          survey_.cluster_version->minor_str() +
          (survey_.downgrade_target ? ", downgrade to " + survey_.downgrade_target->minor_str() + " enabled" : "") +
          ")");
    result_.from = from_;
    result_.to = target_;
    result_.kind = step_.kind;
    if (step_.kind == VersionStepKind::kSame && !resuming && binaries_in_place()) {
      spdlog::info("member {} runs etcd {} already: nothing to do", m_.name, target_);
      nothing_to_do_ = true;
      if (rollback_ && interrupted) {
        // The upgrade stopped before it changed anything: the rollback is done by recording it.
        ChangeState s;
        s.from = target_;
        s.to = target_;
        s.kind = "rollback";
        s.status = "done";
        s.phase = "preflight";
        s.started_at = format_rfc3339_micros(std::chrono::system_clock::now());
        save_state(m_, s);
      }
      if (state_) result_.backup = state_->backup;
      return;
    }

    QuorumCheck q = check_stop(survey_.info, local_id_);
    if (!q.safe) {
      if (!(o_.allow_downtime && q.voters == 1)) {
        throw Error(ErrorKind::kUnavailable,
                    "restarting member " + m_.name + " would lose quorum: " + q.explanation + ": nothing was changed",
                    q.voters == 1 ? "a one-member cluster is unavailable while its member restarts: pass "
                                    "--allow-downtime to accept that"
                                  : "bring the other members back first (etcdadm info)");
      }
      spdlog::warn("--allow-downtime: {}", q.explanation);
    }
    check("quorum: " + q.explanation);

    if (!resuming) {
      ChangeState s;
      s.from = from_;
      s.to = target_;
      s.kind = rollback_ ? "rollback" : version_step_name(step_.kind);
      s.status = "in-progress";
      s.phase = "preflight";
      s.started_at = format_rfc3339_micros(std::chrono::system_clock::now());
      state_ = s;
      save_state(m_, *state_);
      failpoint("upgrade/preflight/recorded");
    }
    result_.backup = state_->backup;
  }

  bool binaries_in_place() const { return version_in(m_.install_dir) == target_; }

  void backup() {
    if (!state_->backup.empty()) {
      spdlog::info("backup {} was taken for this change already", state_->backup);
      return;
    }
    if (!o_.backup) {
      spdlog::warn("no backup before this change (--skip-backup)");
      return;
    }
    state_->backup = o_.backup(*cluster_client());
    save_state(m_, *state_);
    result_.backup = state_->backup;
    spdlog::info("backup {} taken before the change", state_->backup);
  }

  void install() {
    // What the member runs now, kept for the rollback (before anything is replaced).
    const std::string from_dir = kept_release_dir(m_, from_);
    if (version_in(from_dir) != normalise_version(from_)) {
      if (version_in(m_.install_dir) == normalise_version(from_)) {
        ReleaseSpec keep;
        keep.binaries_dir = m_.install_dir;
        keep.version = from_;
        install_release(keep, from_dir);
        spdlog::info("kept etcd {} in {}", from_, from_dir);
      } else {
        spdlog::warn("the binaries of etcd {} are no longer in {}: a rollback will have to install them again", from_,
                     m_.install_dir);
      }
    }
    failpoint("upgrade/install/kept");
    const std::string to_dir = kept_release_dir(m_, target_);
    if (version_in(to_dir) == target_) {
      spdlog::info("etcd {} is in {} already", target_, to_dir);
      return;
    }
    ReleaseSpec spec = o_.release;
    spec.version = target_;
    if (rollback_ && spec.binaries_dir.empty() && spec.tarball.empty()) {
      spdlog::info("the binaries of etcd {} were not kept: installing them from the release", target_);
    }
    auto installed = install_release(spec, to_dir);
    spdlog::info("etcd {} installed in {} (from {})", installed.version, to_dir, installed.source);
  }

  std::unique_ptr<EtcdClient> cluster_client() {
    auto urls = healthy_client_urls(survey_.info);
    if (urls.empty()) urls = {m_.loopback_client_url()};
    return std::make_unique<EtcdClient>(connection_to(m_, urls));
  }

  void downgrade() {
    const EtcdVersion to = parse_version_or_throw(target_, "--version");
    auto cluster = cluster_client();
    if (step_.enable_downgrade) {
      try {
        // Validate first: it changes nothing and tells why etcd would refuse.
        cluster->downgrade(etcdserverpb::DowngradeRequest::VALIDATE, to.minor_str());
        cluster->downgrade(etcdserverpb::DowngradeRequest::ENABLE, to.minor_str());
      } catch (const Error& e) {
        // Enabled in the meantime: an earlier run whose answer was lost, or another host's apply.
        if (!e.mentions("downgrade job in progress")) throw;
      }
      check("etcd's downgrade to " + to.minor_str() + " enabled");
      failpoint("upgrade/downgrade/enabled");
    }
    wait_ready_to_downgrade();
  }

  // etcd's leader lowers the cluster version at its next check once the downgrade is enabled, and
  // each member its storage version after that: a member may only be stopped once its data is
  // readable by the older binary.
  void wait_ready_to_downgrade() {
    const EtcdVersion to = parse_version_or_throw(target_, "--version");
    const std::string want_storage = to.minor_str() + ".0";
    wait_until(
        "storage version " + want_storage + " on member " + m_.name, o_.health_timeout,
        [&] {
          auto report = read_version_report(m_, m_.loopback_client_url());
          auto cv = EtcdVersion::parse(report.cluster);
          if (!cv || !cv->same_minor(to)) {
            throw Error(ErrorKind::kUnavailable,
                        "the cluster version is " + report.cluster + ", not " + to.minor_str());
          }
          if (!report.storage.empty() && report.storage != want_storage) {
            throw Error(ErrorKind::kUnavailable, "the storage version is still " + report.storage);
          }
        },
        [] { return true; }, "see the member's log (etcd logs \"The server is ready to downgrade\")");
    check("member " + m_.name + " is ready to downgrade (cluster version " + to.minor_str() + ", storage version " +
          want_storage + ")");
  }

  void leadership() {
    EtcdClient local(local_connection(m_));
    etcdserverpb::StatusResponse st;
    try {
      st = local.status(m_.loopback_client_url());
    } catch (const Error& e) {
      spdlog::info("member {} does not answer ({}): it leads nothing", m_.name, e.what());
      return;
    }
    if (st.leader() != st.header().member_id()) {
      spdlog::info("member {} is a follower: no leadership to move", m_.name);
      return;
    }
    // The healthy voter the furthest along; one on the target version first (it restarts no more).
    const MemberInfo* best = nullptr;
    for (const auto& x : survey_.info.members) {
      if (x.id == local_id_ || x.learner || !member_healthy(x)) continue;
      auto better = [&](const MemberInfo& a, const MemberInfo& b) {
        bool a_at = a.version == target_, b_at = b.version == target_;
        if (a_at != b_at) return a_at;
        return a.raft_index > b.raft_index;
      };
      if (best == nullptr || better(x, *best)) best = &x;
    }
    if (best == nullptr) {
      spdlog::warn("member {} leads and no other voter can take over: the cluster waits for its restart", m_.name);
      return;
    }
    hand_leadership(local, m_.loopback_client_url(), m_.name, best->id, label(*best), member_log_hint(m_));
    check("leadership moved from " + m_.name + " to " + label(*best));
  }

  // raft_snapshot_due_before_switch (upgrade.h): a snapshot every 10,000 entries on 3.6 leaves a
  // quiet cluster's v2 entries in the log for good, so the member starts once more on its current
  // binary with --snapshot-count 1, which takes a snapshot at its first apply (its own attributes,
  // published at start), and 3.7 replays its log from there.
  void snapshot_on_current_binary() {
    if (version_in(m_.install_dir) == target_) return;  // switched already (a run again)
    uint64_t applied = 0;
    try {
      applied = EtcdClient(local_connection(m_)).status(m_.loopback_client_url()).raftappliedindex();
    } catch (const Error& e) {
      spdlog::info("member {} does not answer ({}): its raft snapshot is taken at its next start", m_.name, e.what());
    }
    const std::string snap_dir = m_.data_dir + "/member/snap";
    // A member that did not answer says nothing of its applied index: the snapshot it has now is
    // the floor (its start applies at least its own attributes past it).
    const uint64_t past = std::max(applied, newest_raft_snapshot_index(snap_dir));
    recheck_quorum();
    // What the member ran with before (a kubeadm member's --snapshot-count, carried over) comes back.
    std::optional<std::string> configured;
    for (const auto& [name, value] : parse_env_file(read_file(m_.env_file()))) {
      if (name == "ETCD_SNAPSHOT_COUNT") configured = value;
    }
    set_member_env(m_, "ETCD_SNAPSHOT_COUNT", "1");
    try {
      init_system_->stop(m_, o_.stop_grace);
      init_system_->start(m_);
      wait_until(
          "a raft snapshot of member " + m_.name + " past index " + std::to_string(past), o_.health_timeout,
          [&] {
            if (newest_raft_snapshot_index(snap_dir) <= past) throw Error(ErrorKind::kUnavailable, "not yet");
          },
          [&] { return member_alive(m_, *init_system_); }, member_log_hint(m_));
    } catch (const Error&) {
      // Never left behind: a member on --snapshot-count 1 writes a snapshot at every apply. It
      // starts again as configured before the error is told (when it runs at all).
      set_member_env(m_, "ETCD_SNAPSHOT_COUNT", configured);
      if (member_alive(m_, *init_system_)) {
        spdlog::warn("member {} restarts without --snapshot-count 1 after the failed wait", m_.name);
        try {
          init_system_->stop(m_, o_.stop_grace);
          init_system_->start(m_);
        } catch (const Error& e) {
          spdlog::warn("member {} did not restart: {}", m_.name, e.what());
        }
      }
      throw;
    }
    set_member_env(m_, "ETCD_SNAPSHOT_COUNT", configured);
    check("a raft snapshot of member " + m_.name + " at index " + std::to_string(newest_raft_snapshot_index(snap_dir)) +
          " on etcd " + from_ + ": etcd " + target_ + " replays no entry from before it");
  }

  void switch_binaries() {
    const std::string to_dir = kept_release_dir(m_, target_);
    if (version_in(to_dir) != target_) {
      throw Error(ErrorKind::kNotFound, "etcd " + target_ + " is not in " + to_dir, "run the install phase first");
    }
    if (raft_snapshot_due_before_switch(from_, target_)) snapshot_on_current_binary();
    // Renamed in one by one: the running etcd keeps its old file, and a binary is always there.
    ReleaseSpec from_kept;
    from_kept.binaries_dir = to_dir;
    from_kept.version = target_;
    install_release(from_kept, m_.install_dir);
    failpoint("upgrade/switch/renamed");
    m_.version = target_;
    save_member_state(m_);
    // etcd's corruption checks go by other names from one release to the next (3.7 ignores the
    // 3.5 ones, 3.6 refuses both at once): the env file names them as the target reads them.
    write_corruption_checks(m_);
    write_etcdctl_files(m_);
    auto files = init_system_->configure(m_);  // the kubelet's manifest names the image version
    spdlog::info("etcd {} in place in {}{}", target_, m_.install_dir,
                 files.empty() ? "" : "; rewrote " + files.front());

    std::string running;
    try {
      running = EtcdClient(local_connection(m_)).status(m_.loopback_client_url()).version();
    } catch (const Error&) {
    }
    if (running == target_) {
      spdlog::info("member {} runs etcd {} already", m_.name, target_);
      return;
    }
    if (!running.empty()) {
      // It runs the old binary: what stopping it needs is checked again now, as minutes may have
      // passed since preflight (and `phase switch` may run on its own).
      if (step_.kind == VersionStepKind::kDowngrade) wait_ready_to_downgrade();
      recheck_quorum();
    }
    if (m_.init_system != InitSystemKind::kKubelet) {
      init_system_->stop(m_, o_.stop_grace);
      failpoint("upgrade/switch/stopped");
      init_system_->start(m_);
    }
    spdlog::info("etcd {} started through {}", target_, init_system_name(m_.init_system));
  }

  void recheck_quorum() {
    ClusterSurvey now = survey_cluster(m_, o_.endpoints);
    QuorumCheck q = check_stop(now.info, local_id_);
    if (!q.safe && !(o_.allow_downtime && q.voters == 1)) {
      throw Error(
          ErrorKind::kUnavailable,
          "stopping member " + m_.name + " now would lose quorum: " + q.explanation + "; its etcd was not stopped",
          "the binaries of etcd " + target_ +
              " are in place but not running: run this command again once the other members are healthy");
    }
    check("quorum before the restart: " + q.explanation);
  }

  void health() {
    EtcdClient local(local_connection(m_));
    wait_member_healthy(m_, local, *init_system_, o_.health_timeout);
    auto alive = [&] { return member_alive(m_, *init_system_); };
    wait_until(
        "version of member " + m_.name, o_.health_timeout,
        [&] {
          auto v = local.status(m_.loopback_client_url()).version();
          if (v != target_) throw Error(ErrorKind::kUnavailable, "it runs " + v + ", not " + target_);
        },
        alive, member_log_hint(m_));
    // Caught up: applied everything the leader had when the member came back.
    const uint64_t leader_index = wait_caught_up(
        local, m_.loopback_client_url(), "catching up of member " + m_.name,
        [&](uint64_t id) {
          for (const auto& x : survey_.info.members) {
            if (x.id == id && !x.client_urls.empty()) return x.client_urls.front();
          }
          return std::string();
        },
        o_.health_timeout, alive, member_log_hint(m_));
    check(fmt::format("member {} healthy on etcd {}, caught up with the leader (raft index {})", m_.name, target_,
                      leader_index));
    state_->status = "done";
    save_state(m_, *state_);
  }

  UpgradeOptions o_;
  MemberConfig& m_;
  bool rollback_;
  std::unique_ptr<InitSystem> init_system_;
  std::optional<ChangeState> state_;
  ClusterSurvey survey_;
  VersionStep step_;
  std::string target_;
  std::string from_;
  uint64_t local_id_ = 0;
  bool nothing_to_do_ = false;
  UpgradeResult result_;
};

}  // namespace

bool raft_snapshot_due_before_switch(const std::string& from, const std::string& to) {
  const auto f = EtcdVersion::parse(from), t = EtcdVersion::parse(to);
  return f && t && *f < EtcdVersion{3, 7, 0} && !(*t < EtcdVersion{3, 7, 0});
}

std::string kept_release_dir(const MemberConfig& m, const std::string& version) {
  return m.install_dir + "/etcd-releases/v" + normalise_version(version);
}

std::string upgrade_state_file(const MemberConfig& m) { return m.config_dir + "/upgrade.json"; }

const std::vector<Phase>& upgrade_phases() { return kUpgradePhases; }

VersionReport read_version_report(const MemberConfig& m, const std::string& client_url) {
  HttpOptions http;
  http.ca_file = m.ca_cert();
  http.client_cert_file = m.cert("etcdctl-etcd-client");
  http.client_key_file = m.key("etcdctl-etcd-client");
  http.connect_timeout = 3s;
  http.idle_timeout = 10s;
  HttpClient client(http);
  HttpRequest req;
  req.url = client_url + "/version";
  auto resp = client.perform(req);
  if (!resp.ok()) {
    throw Error(ErrorKind::kUnavailable, fmt::format("{} answered HTTP {}", req.url, resp.status));
  }
  try {
    auto j = nlohmann::json::parse(resp.body);
    VersionReport r;
    r.server = j.value("etcdserver", "");
    r.cluster = j.value("etcdcluster", "");
    r.storage = j.value("storage", "");
    return r;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kCorrupt, req.url + " did not answer with etcd's version JSON: " + e.what());
  }
}

ClusterSurvey survey_cluster(const MemberConfig& m, const std::vector<std::string>& extra_endpoints) {
  ClusterSurvey s;
  // The local member is found by its peer URL (it may be down), so no member ID is needed here.
  s.info = cluster_info(connection_to(m, cluster_endpoints_of(m, extra_endpoints)), 0);
  const MemberInfo* asked = nullptr;  // for /version: the leader, else any member that answers
  for (const auto& x : s.info.members) {
    if (!x.reachable) {
      s.problems.push_back("member " + label(x) + " does not answer: " + x.status_error);
      continue;
    }
    for (const auto& e : x.errors) s.problems.push_back("member " + label(x) + ": " + e);
    if (!x.downgrade_target.empty()) s.downgrade_target = EtcdVersion::parse(x.downgrade_target);
    if (asked == nullptr || x.leader) asked = &x;
  }
  // The cluster version as the leader tells it (every member agrees soon after a change).
  if (asked != nullptr) {
    try {
      if (auto cv = EtcdVersion::parse(read_version_report(m, asked->client_urls.front()).cluster))
        s.cluster_version = cv;
    } catch (const Error& e) {
      s.problems.push_back("/version of member " + label(*asked) + ": " + e.what());
    }
  }
  if (s.info.leader_id == 0) s.problems.push_back("no leader");
  try {
    auto urls = healthy_client_urls(s.info);
    if (!urls.empty()) {
      EtcdClient client(connection_to(m, urls));
      for (const auto& a : list_alarms(client))
        s.alarms.push_back(fmt::format("{} on member {:x}", a.alarm, a.member_id));
    }
  } catch (const Error& e) {
    s.problems.push_back(std::string("alarm list: ") + e.what());
  }
  for (const auto& a : s.alarms) s.problems.push_back("alarm " + a);
  return s;
}

UpgradePlan plan_upgrade(const MemberConfig& m, const std::string& target_version,
                         const std::vector<std::string>& extra_endpoints) {
  UpgradePlan plan;
  plan.target = parse_version_or_throw(normalise_version(target_version), "--version");
  plan.survey = survey_cluster(m, extra_endpoints);
  plan.problems = plan.survey.problems;
  if (!plan.survey.cluster_version) plan.problems.push_back("no member told the cluster version (/version)");
  std::vector<EtcdVersion> versions;
  for (const auto& x : plan.survey.info.members) {
    if (auto v = EtcdVersion::parse(x.version)) versions.push_back(*v);
  }
  for (const auto& x : plan.survey.info.members) {
    UpgradePlanEntry e;
    e.member = x;
    e.version = EtcdVersion::parse(x.version);
    e.quorum = check_stop(plan.survey.info, x.id);
    if (e.version && plan.survey.cluster_version) {
      VersionStepInput in;
      in.member = *e.version;
      in.target = plan.target;
      in.cluster = *plan.survey.cluster_version;
      in.members = versions;
      in.downgrade = plan.survey.downgrade_target;
      e.step = check_version_step(in);
      if (!e.step.allowed) plan.problems.push_back(label(x) + ": " + e.step.reason);
    } else {
      e.step.allowed = false;
      e.step.reason = "its version is unknown (it does not answer)";
    }
    if (e.step.kind != VersionStepKind::kSame && !e.quorum.safe) {
      plan.problems.push_back(label(x) + " cannot restart without losing quorum: " + e.quorum.explanation);
    }
    plan.members.push_back(std::move(e));
  }
  // Done ones first, the leader last, the rest by name.
  auto rank = [](const UpgradePlanEntry& e) {
    if (e.step.kind == VersionStepKind::kSame) return 0;
    return e.member.leader ? 2 : 1;
  };
  std::stable_sort(plan.members.begin(), plan.members.end(), [&](const auto& a, const auto& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return a.member.name < b.member.name;
  });
  plan.allowed = plan.problems.empty();
  return plan;
}

UpgradeResult run_upgrade(const UpgradeOptions& options, const std::string& phase) {
  return VersionChange(options, /*rollback=*/false).run(phase);
}

UpgradeResult run_upgrade_rollback(const UpgradeOptions& options) {
  auto state = load_state(options.member);
  if (!state) {
    throw Error(
        ErrorKind::kNotFound,
        "no upgrade of member " + options.member.name + " is recorded (" + upgrade_state_file(options.member) + ")",
        "etcdadm upgrade rollback goes back from the last etcdadm upgrade apply of this member");
  }
  UpgradeOptions o = options;
  if (state->kind == "rollback") {
    if (!state->in_progress()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "the last change of member " + options.member.name + " was a rollback to " + state->to + " already",
                  "to go forward again: etcdadm upgrade apply --version " + state->from);
    }
    o.release.version = state->to;  // finish the rollback that stopped part way
  } else {
    o.release.version = state->from;
  }
  return VersionChange(o, /*rollback=*/true).run("");
}

std::optional<InterruptedChange> change_in_progress(const MemberConfig& member) {
  auto state = load_state(member);
  if (!state || !state->in_progress()) return std::nullopt;
  return InterruptedChange{state->from, state->to, state->kind == "rollback"};
}

}  // namespace etcdadm

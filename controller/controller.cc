#include "controller/controller.h"

#include <openssl/rand.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error.h"
#include "common/failpoint.h"
#include "common/fs.h"
#include "common/interrupt.h"
#include "common/json_fields.h"
#include "common/sha256.h"
#include "common/timefmt.h"
#include "backup/pre_change.h"
#include "etcd/client.h"
#include "etcdadm/init_system.h"
#include "etcdadm/lifecycle/local_member.h"
#include "changelog/heartbeat.h"
#include "etcdadm/maintenance/defrag.h"
#include "etcdadm/maintenance/space.h"
#include "etcdadm/member_health.h"
#include "etcdadm/pki.h"
#include "etcdadm/quorum.h"
#include "etcdadm/upgrade/upgrade.h"
#include "restore/member_restore.h"
#include "restore/pitr.h"
#include "restore/restore_method.h"
#include "restore/resolve.h"
#include "common/text.h"
#include "store/blob_capabilities.h"
#include "store/etcd_manager.h"

namespace etcdadm {

using json = nlohmann::json;
using std::chrono::steady_clock;

namespace {

constexpr const char* kLocalStateFile = "etcdadm-auto.json";
constexpr size_t kEventsKept = 500;

// A fresh initial-cluster token: member and cluster IDs derive from it, so two plans never share one.
std::string new_cluster_token() {
  unsigned char bytes[8];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw Error(ErrorKind::kInternal, "RAND_bytes failed");
  return "etcd-auto-" + to_hex(bytes, sizeof bytes);
}

// init's or join's phases as the controller runs them: the etcdctl files written before etcd
// starts (they need no running member), so that a controller killed right after the start leaves
// nothing undone that a later round would not see; init's health wait left out (the controller
// goes on ticking while the other planned members start).
std::vector<std::string> controller_phases(const std::vector<Phase>& phases) {
  std::vector<std::string> out;
  for (const auto& p : phases) {
    if (p.name == "health" || p.name == "etcdctl") continue;
    if (p.name == "start") out.push_back("etcdctl");
    out.push_back(p.name);
  }
  return out;
}

int64_t unix_now() { return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// The controller's view of a cluster must come back fast: a member that does not answer is one
// fact among others, not a reason to stall every other decision.
ConnectionConfig quick(ConnectionConfig c) {
  c.dial_timeout = std::chrono::milliseconds(1500);
  c.command_timeout = std::chrono::milliseconds(3000);
  return c;
}

}  // namespace

AutoLocalState read_auto_local_state(const std::string& config_dir) {
  AutoLocalState s;
  const std::string path = config_dir + "/" + kLocalStateFile;
  if (!path_exists(path)) return s;
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kCorrupt, path + " is not JSON: " + e.what(), "remove it only if this host never ran a member");
  }
  if (!j.is_object()) throw Error(ErrorKind::kCorrupt, path + " is not a JSON object");
  s.cluster_token = string_field(j, "clusterToken", path);
  s.member_started = bool_field(j, "memberStarted", path);
  s.member_id = integer_field<uint64_t>(j, "memberID", path).value_or(0);
  s.cluster_id = integer_field<uint64_t>(j, "clusterID", path).value_or(0);
  s.plan_sequence = integer_field<uint64_t>(j, "planSequence", path).value_or(0);
  return s;
}

void write_auto_local_state(const std::string& config_dir, const AutoLocalState& s) {
  make_dirs(config_dir, 0755);
  json j = {{"clusterToken", s.cluster_token},
            {"memberStarted", s.member_started},
            {"memberID", s.member_id},
            {"clusterID", s.cluster_id},
            {"planSequence", s.plan_sequence}};
  write_file_atomic(config_dir + "/" + kLocalStateFile, j.dump(2) + "\n", 0600, /*overwrite=*/true);
}

Controller::Controller(BackupStore store, ControllerOptions options)
    : store_(std::move(store)),
      options_(std::move(options)),
      catalog_(Catalog::open_or_memory(options_.catalog_path.empty() ? Catalog::default_path() : options_.catalog_path)),
      member_(options_.lifecycle.member),
      init_system_(make_init_system(member_.init_system)),
      pool_(quick(connection_to(member_, {}))) {
  if (!path_exists(member_.ca_cert()) || !path_exists(member_.ca_key())) {
    throw Error(ErrorKind::kNotFound, "no cluster CA in " + member_.certs_dir + " (ca.crt and ca.key)",
                "copy ca.crt and ca.key (mode 0600) from the host that holds the cluster's CA, or make one with "
                "`etcdadm init phase certificates` on one host and copy it to the others: every host of a cluster "
                "needs the same CA, so the controller never makes one itself");
  }
  ca_sha256_ = ca_fingerprint(member_.ca_cert());
  // The store must decide conditional writes itself: the plan is what keeps two hosts from
  // creating two clusters.
  conditional_writes(*store_, "etcdadm auto", auto_probe_key(member_.name));
  // This host's certificates (the client one reaches the other members), issued from the CA.
  run_init(options_.lifecycle, "certificates");
  sequence_ = static_cast<uint64_t>(to_unix_micros(std::chrono::system_clock::now()));
}

std::vector<HostView> Controller::judge_liveness(const std::vector<HostRecord>& records, int64_t now_unix) {
  const auto now = steady_clock::now();
  std::vector<HostView> out;
  for (const auto& r : records) {
    auto [it, first] = seen_.try_emplace(r.name);
    Seen& s = it->second;
    if (!first && s.sequence != r.sequence) s.changed = now;
    s.sequence = r.sequence;
    const bool moving = s.changed != steady_clock::time_point{} && now - s.changed < options_.host_timeout;
    const bool fresh = std::llabs(now_unix - r.heartbeat_unix) <= options_.host_timeout.count();
    out.push_back(HostView{r, r.name == member_.name || moving || fresh});
  }
  return out;
}

// The maintenance record, or an empty one when it does not parse (logged): it is rewritten whole
// by the next maintenance step.
static MaintenanceRecord readable_maintenance(BlobStore& store) {
  try {
    return read_maintenance(store);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt) throw;
    spdlog::warn("auto: ignoring the maintenance record: {}", e.what());
    return {};
  }
}

// The first of the member certificates in `certs_dir` to expire (unix seconds, its file name;
// 0 and "" when there is none) and the CA's expiry.
struct CertExpiry {
  int64_t first_unix = 0;
  std::string first;
  int64_t ca_unix = 0;
};
static CertExpiry cert_expiry(const std::string& certs_dir) {
  CertExpiry e;
  for (const auto& c : inspect_certs(certs_dir)) {
    const int64_t until = std::chrono::duration_cast<std::chrono::seconds>(c.not_after.time_since_epoch()).count();
    if (c.is_ca) {
      e.ca_unix = until;
    } else if (e.first_unix == 0 || until < e.first_unix) {
      e.first_unix = until;
      e.first = c.name + ".crt";
    }
  }
  return e;
}

LocalView Controller::observe_local() {
  LocalView v;
  AutoLocalState state = read_auto_local_state(member_.config_dir);
  const AutoLocalState before = state;
  const bool has_data = !is_empty_data_dir(member_.data_dir) && path_exists(member_.data_dir + "/member");
  // From the moment etcd wrote its member dir, its raft log counts: empty data is lost data.
  if (has_data) state.member_started = true;
  v.data = has_data ? "member" : state.member_started ? "lost" : "empty";
  v.cluster_token = state.cluster_token;
  MemberConfig recorded;
  if (has_data || load_member_state(member_.config_dir, recorded)) {
    v.etcd_running = init_system_->running(member_);
  }
  if (v.etcd_running) {
    try {
      auto status = pool_.client(member_.loopback_client_url()).status(member_.loopback_client_url());
      state.member_id = status.header().member_id();
      state.cluster_id = status.header().cluster_id();
      v.has_leader = status.leader() != 0;
    } catch (const Error& e) {
      spdlog::debug("this host's member does not answer: {}", e.what());
    }
  }
  // Why etcd stopped again after this controller started it: its initial corruption check is the
  // one refusal the acting controller acts on (after comparing the other members' data).
  if (!has_data || (v.etcd_running && v.has_leader)) {
    refused_.clear();
  } else if (!v.etcd_running && !start_mark_.empty() && refused_.empty() &&
             refused_on_inconsistent_data(init_system_->output_since(member_, start_mark_))) {
    spdlog::warn("auto: etcd refused to start this host's member: its initial corruption check found the data differs from a peer's");
    refused_ = kEtcdRefusedInconsistent;
  }
  v.etcd_refused = refused_;
  if (last_start_) v.seconds_since_start = std::chrono::duration_cast<std::chrono::seconds>(steady_clock::now() - *last_start_).count();
  v.member_id = state.member_id;
  v.cluster_id = state.cluster_id;
  v.plan_sequence = state.plan_sequence;
  v.version_change = change_in_progress(member_);
  if (!(state == before)) write_auto_local_state(member_.config_dir, state);
  if (has_data) {
    try {
      const CertExpiry e = cert_expiry(member_.certs_dir);
      v.certs_expire_unix = e.first_unix;
      v.first_expiring = e.first;
      v.ca_expires_unix = e.ca_unix;
    } catch (const Error& e) {
      spdlog::warn("auto: cannot read this host's certificates in {}: {}", member_.certs_dir, e.what());
    }
  }
  return v;
}

ClusterView Controller::observe_cluster(const std::vector<HostView>& hosts, const LocalView& local) {
  ClusterView v;
  // The other members first: a member that was just removed still lists itself until it learns
  // of its removal, and only the others' word tells this host it was removed.
  std::vector<std::string> endpoints = other_members(hosts);
  if (local.etcd_running) endpoints.push_back(member_.loopback_client_url());
  if (endpoints.empty()) return v;
  try {
    // Every member's server certificate must come from this host's CA: a forged host record can
    // point here, but not make a stranger's etcd pass for a member.
    v.info = cluster_info(pool_, endpoints, local.member_id);
    v.answered = true;
  } catch (const Error& e) {
    spdlog::debug("no member answered ({}): {}", endpoints.front(), e.what());
  }
  return v;
}

// How long each member has been unhealthy, counted only while this controller acts (a new acting
// controller starts afresh: that delays a replacement, never hastens one).
void Controller::track_health(Observation& o) {
  if (!is_acting(o)) {
    unhealthy_since_.clear();
    return;
  }
  const auto now = steady_clock::now();
  std::map<uint64_t, steady_clock::time_point> still;
  for (const auto& m : o.cluster.info.members) {
    if (member_healthy(m)) continue;
    auto it = unhealthy_since_.find(m.id);
    still[m.id] = it == unhealthy_since_.end() ? now : it->second;
    o.unhealthy_seconds[m.id] = std::chrono::duration_cast<std::chrono::seconds>(now - still[m.id]).count();
  }
  unhealthy_since_ = std::move(still);
}

Observation Controller::observe() {
  Observation o;
  o.self = member_.name;
  o.self_peer_url = member_.peer_url();
  o.self_client_url = member_.client_url();
  o.ca_sha256 = ca_sha256_;
  o.store_url = store_->url();
  o.now_unix = unix_now();
  // The store costs a request per file; etcd is free to ask. While the cluster is as the spec
  // says, the store is read every idle interval and the members every round.
  if (!store_view_ || !settled_ || steady_clock::now() - store_view_->read_at >= options_.idle_interval) {
    StoreView v;
    v.read_at = steady_clock::now();
    v.spec = read_etcd_manager_cluster_spec(*store_);
    v.auto_spec = read_auto_spec(*store_).value_or(AutoSpec{});
    v.pause = read_pause(*store_);
    v.created_marker = read_etcd_manager_cluster_created(*store_).has_value();
    if (auto plan = capability<ConditionalWrites>(*store_)->read_versioned(kAutoPlanKey, 1 << 20)) {
      v.plan = parse_cluster_plan(plan->contents, o.store_url + "/" + kAutoPlanKey);
      v.plan_version = plan->version;
    }
    // The queue as etcd-manager reads it; a command this etcdadm cannot read stops it from acting.
    try {
      for (auto& cmd : list_etcd_manager_commands(*store_)) {
        if (cmd.restore_backup) {
          v.restore_command = std::move(cmd);
          break;
        }
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCorrupt) throw;
      v.queue_problem = e.what();
    }
    if (!v.auto_spec.defrag_schedule.empty()) {
      // At worst every member is defragmented once more, and the record written whole again.
      v.maintenance = readable_maintenance(*store_);
    }
    v.ca_rotation = read_ca_rotation(*store_);
    std::vector<std::string> unreadable;
    v.hosts = read_host_records(*store_, &unreadable);
    for (const auto& u : unreadable) spdlog::warn("ignoring a host record: {}", u);
    store_view_ = std::move(v);
  }
  o.spec = store_view_->spec;
  o.auto_spec = store_view_->auto_spec;
  o.pause = store_view_->pause;
  o.created_marker = store_view_->created_marker;
  o.plan = store_view_->plan;
  o.restore_command = store_view_->restore_command;
  o.queue_problem = store_view_->queue_problem;
  o.maintenance = store_view_->maintenance;
  o.hosts = judge_liveness(store_view_->hosts, o.now_unix);
  o.local = observe_local();
  if ((o.ca_rotation = store_view_->ca_rotation)) {
    o.ca_rotation_state = local_ca_rotation_state(*o.ca_rotation, member_.certs_dir, member_.config_dir);
    if (o.ca_rotation_state != CaRotationState::kOtherCa && o.ca_rotation_state != CaRotationState::kSwitched) {
      try {
        open_ca_rotation(*o.ca_rotation, member_.certs_dir);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kAuth && e.kind() != ErrorKind::kCorrupt && e.kind() != ErrorKind::kNotFound) throw;
        o.ca_rotation_problem = e.what();
      }
    }
  }
  bool self_listed = false;
  for (const auto& h : o.hosts) self_listed = self_listed || h.record.name == o.self;
  if (!self_listed) {  // not registered yet: it counts itself
    HostRecord me;
    me.name = o.self;
    me.peer_url = o.self_peer_url;
    me.client_url = o.self_client_url;
    me.ca_sha256 = ca_sha256_;
    me.data = o.local.data;
    o.hosts.push_back(HostView{me, true});
  }
  o.cluster = observe_cluster(o.hosts, o.local);
  track_health(o);
  observe_version_change(o);
  observe_hashes(o);
  // Under NOSPACE the last recovery's outcome decides whether to try again (the acting controller
  // may have changed since: the record is in the store). Read only then.
  if (o.spec && o.auto_spec.defrag_schedule.empty()) {
    const auto alarms = alarms_in_status(o.cluster.info);
    if (std::any_of(alarms.begin(), alarms.end(), [](const MemberAlarm& a) { return a.alarm == "NOSPACE"; })) {
      o.maintenance = readable_maintenance(*store_);
    }
  }

  // How long a quorum of the spec's members has been live while a plan is wanted (no plan yet, or
  // a queued restore not planned yet): the settle window.
  int live_same_ca = 0;
  for (const auto& h : o.hosts) live_same_ca += h.live && h.record.ca_sha256 == ca_sha256_;
  const bool restore_unplanned = o.restore_command && !(o.plan && o.plan->command_key == o.restore_command->key);
  const bool lost = total_loss(o);
  if (o.spec && (!o.plan || restore_unplanned || (lost && o.auto_spec.auto_restore)) &&
      live_same_ca >= quorum_of(o.spec->member_count)) {
    if (!quorum_since_) quorum_since_ = steady_clock::now();
    o.quorum_seen_seconds = std::chrono::duration_cast<std::chrono::seconds>(steady_clock::now() - *quorum_since_).count();
  } else {
    quorum_since_.reset();
  }
  if (o.created_marker && !o.cluster.answered) {
    if (!unanswered_since_) unanswered_since_ = steady_clock::now();
    o.unanswered_seconds = std::chrono::duration_cast<std::chrono::seconds>(steady_clock::now() - *unanswered_since_).count();
  } else {
    unanswered_since_.reset();
  }
  if (lost) {
    if (!total_loss_since_) total_loss_since_ = steady_clock::now();
    o.total_loss_seconds = std::chrono::duration_cast<std::chrono::seconds>(steady_clock::now() - *total_loss_since_).count();
    if (o.spec && o.auto_spec.auto_restore && o.total_loss_seconds >= o.auto_spec.auto_restore_delay_seconds) {
      o.auto_restore = auto_restore_candidate(o.now_unix);
    }
  } else {
    total_loss_since_.reset();
  }
  return o;
}

Observation::AutoRestoreCandidate Controller::auto_restore_candidate(int64_t now_unix) {
  Observation::AutoRestoreCandidate c;
  BackupRecord b;
  try {
    PointInTime end;
    end.log_end = true;
    b = find_backup_for(*store_, catalog_, "latest", end);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kNotFound) throw;
    c.problem = e.what();
    return c;
  }
  c.backup = b.name;
  c.backup_revision = b.revision.value_or(0);
  const auto windows = log_windows(*store_, {b});
  int64_t known_micros = b.taken_at_micros;
  if (auto w = windows.find(b.name); w != windows.end() && w->second.chain.reaches > c.backup_revision) {
    const changelog::LogChain& chain = w->second.chain;
    c.to_revision = chain.reaches;
    known_micros = w->second.complete_until_micros;
    std::vector<LogRateSample> ends;
    for (const auto& s : chain.segments) ends.push_back({s.last_revision, s.last_observed_ms});
    c.revisions_per_second = log_write_rate(c.backup_revision, b.taken_at_micros, ends);
  }
  c.complete_until_unix = known_micros / 1000000;
  c.bump = sized_revision_bump(c.revisions_per_second, now_unix - c.complete_until_unix);
  return c;
}

// The version turn is read only while a member runs another version than the spec's (or this
// host's own change is unfinished): an idle cluster costs the store nothing more. The acting
// controller also surveys the cluster against etcd's version rules then (plan_upgrade).
void Controller::observe_version_change(Observation& o) {
  turn_version_.clear();
  if (!o.spec || !o.cluster.answered) return;
  const bool behind = voters_behind(o.cluster.info, o.spec->etcd_version);
  if (!behind && !o.local.version_change) return;
  // Surveyed only when no change is under way: every member a healthy voter, a leader.
  const bool whole = o.cluster.info.leader_id != 0 &&
                     std::all_of(o.cluster.info.members.begin(), o.cluster.info.members.end(),
                                 [](const MemberInfo& m) { return !m.learner && member_healthy(m); });
  if (auto turn = capability<ConditionalWrites>(*store_)->read_versioned(kAutoVersionTurnKey, 1 << 16)) {
    o.version_turn = parse_version_turn(turn->contents, o.store_url + "/" + kAutoVersionTurnKey);
    turn_version_ = turn->version;
  }
  MemberConfig recorded;
  if (behind && whole && is_acting(o) && load_member_state(member_.config_dir, recorded)) {
    o.version_plan = plan_upgrade(recorded, o.spec->etcd_version, other_members(o.hosts));
  }
}

// The client URLs of the other hosts that hold a member: more ways to reach the cluster.
std::vector<std::string> Controller::other_members(const std::vector<HostView>& hosts) const {
  std::vector<std::string> out;
  for (const auto& h : hosts) {
    if (h.record.name != member_.name && h.record.data == "member") out.push_back(h.record.client_url);
  }
  return out;
}

ConnectionConfig Controller::members_connection(const std::vector<HostView>& hosts) const {
  std::vector<std::string> endpoints = {member_.loopback_client_url()};
  for (const auto& url : other_members(hosts)) endpoints.push_back(url);
  return connection_to(member_, endpoints);
}

void Controller::record(const std::string& action, const std::string& reason, const std::string& command,
                        const std::string& outcome) {
  spdlog::info("auto: {} ({}): {}{}", action, outcome, reason, command.empty() ? "" : "; by hand: " + command);
  AutoEvent e{to_unix_micros(std::chrono::system_clock::now()), member_.name, action, reason, command, outcome};
  append_auto_event(*store_, e);
  if (++events_written_ % 50 == 0) {
    try {
      trim_auto_events(*store_, kEventsKept);
    } catch (const Error& err) {
      spdlog::warn("could not trim the events in {}: {}", store_->url(), err.what());
    }
  }
}

void Controller::recorded(const Decision& d, const std::function<void()>& step) {
  recorded_with(d, [&] {
    step();
    return std::string();
  });
}

void Controller::recorded_with(const Decision& d, const std::function<std::string()>& step) {
  std::string detail;
  try {
    detail = step();
    pool_.reset();
  } catch (const Error& e) {
    pool_.reset();
    record(step_name(d.step), d.reason, d.command, std::string("failed: ") + e.what());
    throw;
  }
  record(step_name(d.step), d.reason, d.command, detail.empty() ? "done" : "done: " + detail);
}

void Controller::start_planned_member(const ClusterPlan& plan) {
  write_auto_local_state(member_.config_dir, AutoLocalState{plan.cluster_token, false});
  LifecycleOptions o = options_.lifecycle;
  o.member.version = plan.etcd_version;
  o.release.version = plan.etcd_version;
  o.initial_cluster = plan.initial_cluster();
  o.initial_cluster_token = plan.cluster_token;
  o.static_bootstrap = true;
  // Every phase but the health wait: the member answers once a quorum of the plan has started,
  // and this controller goes on ticking (and heartbeating) meanwhile.
  for (const auto& phase : controller_phases(init_phases())) {
    run_init(o, phase);
    failpoint(("auto/create/" + phase).c_str());
  }
}

void Controller::join_as_added(const Decision& d, const Observation& o) {
  // Joined after the current plan: its data belongs to the cluster that plan made. The member and
  // cluster it joins are recorded now, not from a later Status: removed again before this host's
  // next round, its etcd stops at once, and only these IDs tell the host it was removed (else it
  // would start that member again and again).
  AutoLocalState state;
  state.plan_sequence = o.plan ? o.plan->sequence : 0;
  state.member_id = d.member_id;
  state.cluster_id = o.cluster.info.cluster_id;
  write_auto_local_state(member_.config_dir, state);
  LifecycleOptions opts = options_.lifecycle;
  opts.member.version = o.spec->etcd_version;
  opts.release.version = o.spec->etcd_version;
  opts.join_endpoint = d.join_endpoint;
  for (const auto& phase : controller_phases(join_phases())) {
    run_join(opts, phase);
    failpoint(("auto/join/" + phase).c_str());
  }
}

void Controller::forget_member(const std::string& set_aside_as) {
  init_system_->stop(member_, std::chrono::seconds(10));
  failpoint("auto/forget/stopped");
  if (set_aside_as.empty()) {
    remove_all(member_.data_dir + "/member");
  } else {
    if (set_aside_as == "removed") {
      for (const auto& old : remove_set_asides(member_.data_dir, "removed-")) {
        spdlog::info("auto: deleted {}, an earlier removed member's data (only the newest is kept)", old);
      }
    }
    const uint64_t id = read_auto_local_state(member_.config_dir).member_id;
    const std::string aside = set_aside_data_dir(member_.data_dir, set_aside_as + "-" + id_hex(id) + "-" + std::to_string(unix_now()));
    if (!aside.empty()) {
      spdlog::warn("auto: this host's {} member's data is kept in {} for a person to look at (rm -rf {} once it is not needed)",
                   set_aside_as, aside, aside);
    }
  }
  AutoLocalState state;
  state.plan_sequence = read_auto_local_state(member_.config_dir).plan_sequence;
  write_auto_local_state(member_.config_dir, state);
}

void Controller::stop_and_set_aside(const std::string& label) {
  MemberConfig recorded;
  if (load_member_state(member_.config_dir, recorded) && init_system_->running(member_)) {
    init_system_->stop(member_, std::chrono::seconds(30));
  }
  const std::string aside = set_aside_data_dir(member_.data_dir, label);
  if (!aside.empty()) spdlog::info("auto: this host's old data is kept in {}", aside);
}

// The plan's label for data set aside: unique per plan and per attempt (a restore killed half way
// sets its own partial data aside on the next try).
static std::string set_aside_label(const ClusterPlan& plan) {
  return "plan" + std::to_string(plan.sequence) + "-" + std::to_string(unix_now());
}

void Controller::restore_planned_member(const ClusterPlan& plan) {
  stop_and_set_aside(set_aside_label(plan));
  failpoint("auto/restore/set-aside");
  // Until the restore is in the data dir this host's state names no plan: killed before that, the
  // next round restores again (over an empty data dir).
  AutoLocalState state = read_auto_local_state(member_.config_dir);
  write_auto_local_state(member_.config_dir, AutoLocalState{plan.cluster_token, false, 0, 0, state.plan_sequence});
  LifecycleOptions o = options_.lifecycle;
  o.member.version = plan.etcd_version;
  o.release.version = plan.etcd_version;
  o.initial_cluster = plan.initial_cluster();
  o.initial_cluster_token = plan.cluster_token;
  BackupRecord backup = find_backup(*store_, catalog_, plan.backup);
  // Fetched and verified whole before anything is installed or started.
  // Every host restores the same backup with the plan's bump, so the members agree on the revision.
  RestoreMethod method;
  method.kubernetes_bump = plan.kubernetes_revision_bump;
  // An auto-restore replays the change log to exactly the plan's revision on every host.
  PointInTime target;
  target.revision = plan.to_revision;
  o.restore_snapshot = prefetched_backup_restorer(store_, backup, member_.data_dir, plan.etcd_version, method, target);
  for (const auto& phase : controller_phases(init_phases())) {
    run_init(o, phase);
    if (phase == "snapshot") {
      // Restored: from here on this host's data is the plan's, and the plan is never carried out
      // here again (a member started twice from a snapshot would rejoin with a rewound log).
      write_auto_local_state(member_.config_dir, AutoLocalState{plan.cluster_token, false, 0, 0, plan.sequence});
      failpoint("auto/restore/restored");
    }
  }
}

void Controller::set_aside_data(const ClusterPlan& plan) {
  stop_and_set_aside(set_aside_label(plan));
  AutoLocalState state;
  state.plan_sequence = plan.sequence;
  write_auto_local_state(member_.config_dir, state);
}

void Controller::plan_restore(const Decision& d, const Observation& o) {
  // A running cluster is replaced only after a new backup of it (an older one lacks the latest
  // writes): the restore can be undone.
  if (o.cluster.answered) backup_before(d, std::chrono::seconds(0));
  auto& conditional = *capability<ConditionalWrites>(*store_);
  const std::string text = cluster_plan_json(d.plan);
  if (!conditional.write_if(kAutoPlanKey, text, store_view_ ? store_view_->plan_version : "")) {
    spdlog::info("auto: the plan changed while this host planned the restore: reading it again");
    store_view_.reset();
    return;
  }
  failpoint("auto/restore/planned");
  record(step_name(d.step), d.reason, d.command, "done: plan " + std::to_string(d.plan.sequence));
  if (d.new_spec) {
    write_etcd_manager_cluster_spec(*store_, *d.new_spec);
    record("write-spec", "the restore command asks for " + std::to_string(d.new_spec->member_count) + " members of etcd " +
                             d.new_spec->etcd_version, "etcdadm seed --store " + store_->url() + " --members " +
                             std::to_string(d.new_spec->member_count) + " --version " + d.new_spec->etcd_version, "done");
  }
  store_view_.reset();
}

// Whether this host's member leads right now (asked again right before an acting controller's
// change: one that is no longer beside the leader does nothing, another one acts).
bool Controller::still_leads(const Decision& d) {
  auto status = pool_.client(member_.loopback_client_url()).status(member_.loopback_client_url());
  if (status.leader() == status.header().member_id()) return true;
  spdlog::info("auto: this member is no longer the leader: not acting ({})", step_name(d.step));
  return false;
}

// The acting controller's membership changes, each through the members as etcd sees them now.
void Controller::change_membership(const Decision& d) {
  if (!still_leads(d)) return;
  EtcdClient& client = pool_.client(member_.loopback_client_url());
  const char* action = step_name(d.step);
  // No backup before a corrupt member's removal: its data is kept whole on its host, the data that
  // stays is the majority's, and a backup now might be streamed from the corrupt member itself.
  if (d.step != Step::kPromoteMember && !d.corrupt) backup_before(d, options_.pre_change_backup_age);
  if (d.corrupt) {
    // Recorded first: its host's controller sets its data aside once it sees it removed.
    update_maintenance([&](MaintenanceRecord& m) { m.corrupt[d.member_id] = *d.corrupt; });
    failpoint("auto/corrupt/recorded");
  }
  try {
    if (d.step == Step::kAddMember) {
      auto r = client.member_add({d.host.peer_url}, /*learner=*/true);
      failpoint("auto/member/added");
      record(action, d.reason, d.command, "done: learner " + id_hex(r.member().id()));
    } else if (d.step == Step::kPromoteMember) {
      client.member_promote(d.member_id);
      record(action, d.reason, d.command, "done");
    } else {
      client.member_remove(d.member_id);
      failpoint("auto/member/removed");
      record(action, d.reason, d.command, "done");
    }
  } catch (const Error& e) {
    // etcd refuses a promotion until the learner has caught up: that is waiting, not failing.
    if (d.step == Step::kPromoteMember && e.mentions("in sync")) {
      spdlog::info("auto: learner {} has not caught up yet", id_hex(d.member_id));
      return;
    }
    if (d.step == Step::kPromoteMember && e.mentions("can only promote a learner member")) return;  // its host was first
    // etcd's strict reconfiguration check: it takes a change only once every member has been
    // connected for a while (and never one that would leave too few started members). Waiting.
    if (e.mentions("unhealthy cluster") || e.mentions("not enough started members")) {
      spdlog::info("auto: etcd refuses to {} for now ({}): trying again next round", action, e.what());
      return;
    }
    record(action, d.reason, d.command, std::string("failed: ") + e.what());
    throw;
  }
}

void Controller::renew_own_certs(const Decision& d) {
  recorded_with(d, [&] {
    const auto renewed = renew_certs(member_.certs_dir, {}, std::chrono::hours(24 * 365));
    failpoint("auto/certs/renewed");
    check_member_handshake("its renewed certificates");
    const CertExpiry e = cert_expiry(member_.certs_dir);
    return join_list(renewed) + " renewed, the first to expire (" + e.first + ") valid until " +
           format_rfc3339_seconds(SystemTime(std::chrono::seconds(e.first_unix)));
  });
}

void Controller::check_member_handshake(const std::string& what) {
  pool_.reset();  // the next connections present the new client certificate
  // A new handshake with the member proves it serves the new server certificate and accepts the
  // new client one.
  EtcdClient fresh(local_connection(member_));
  wait_until(
      "this host's member answering with " + what, std::chrono::seconds(30),
      [&] {
        auto st = fresh.status(member_.loopback_client_url());
        if (st.leader() == 0) throw Error(ErrorKind::kUnavailable, "no leader");
      },
      [] { return true; }, "");
}

void Controller::ca_reissue(const Decision& d, const Observation& o) {
  recorded_with(d, [&] {
    const RotationCa ca = open_ca_rotation(*o.ca_rotation, member_.certs_dir);
    const auto stems = reissue_under_rotation_ca(member_.certs_dir, ca);
    failpoint("auto/ca-rotation/reissued");
    if (o.local.etcd_running) check_member_handshake("its certificates by the new CA");
    return stems.empty() ? std::string("no member certificates on this host") : join_list(stems) + " re-issued by the new CA";
  });
}

void Controller::ca_switch(const Decision& d, const Observation& o) {
  recorded_with(d, [&] {
    const CaRotationRecord& r = *o.ca_rotation;
    const RotationCa ca = open_ca_rotation(r, member_.certs_dir);
    switch_to_rotation_ca(r, ca, member_.certs_dir, member_.config_dir);
    failpoint("auto/ca-rotation/switched-files");
    std::string moved;
    if (o.local.data == "member" && init_system_->running(member_)) {
      // The leader's restart would cost the cluster an election: its leadership goes first.
      const auto& info = o.cluster.info;
      if (o.local.member_id != 0 && info.leader_id == o.local.member_id) {
        if (const MemberInfo* next = leadership_successor(info, o.local.member_id)) {
          hand_leadership(pool_.client(member_.loopback_client_url()), member_.loopback_client_url(), member_.name, next->id,
                          member_label(*next), member_log_hint(member_));
          moved = ", leadership moved to " + member_label(*next) + " first";
        }
      }
      pool_.reset();
      restart_member(member_, *init_system_, std::chrono::seconds(120));
    }
    finish_ca_switch(r, member_.config_dir);
    ca_sha256_ = ca_fingerprint(member_.ca_cert());
    pool_.reset();
    return "this host's CA is " + r.new_ca_sha256.substr(0, 12) + "... (the old kept as ca.retired-" + r.id + ".crt/key)" +
           (o.local.data == "member" ? "; etcd restarted on it" + moved : "");
  });
}

void Controller::start_ca_rotation(const Decision& d) {
  recorded_with(d, [&] {
    const CaRotationRecord r = new_ca_rotation(member_.certs_dir, member_.name, d.reason, unix_now());
    if (auto other = write_new_ca_rotation(*store_, r)) {
      return "rotation " + other->id + " (" + other->started_by + ") is under way already: following it";
    }
    store_view_.reset();
    return "rotation " + r.id + " written: new CA " + r.new_ca_sha256.substr(0, 12) + "...";
  });
}

void Controller::disarm_corrupt(const Decision& d) {
  if (!still_leads(d)) return;
  recorded(d, [&] {
    EtcdClient& client = pool_.client(member_.loopback_client_url());
    for (uint64_t id : d.members) client.alarm_disarm(id, etcdserverpb::AlarmMember::CORRUPT);
    // The replacements that excused it excuse no later alarm.
    update_maintenance([](MaintenanceRecord& m) {
      for (auto& [id, c] : m.corrupt) c.alarm_settled = true;
    });
  });
}

void Controller::observe_hashes(Observation& o) {
  if (local_member_removed(o)) o.maintenance = readable_maintenance(*store_);
  if (!o.spec || !is_acting(o)) {
    last_hash_check_.reset();
    return;
  }
  // An unhealthy voter whose etcd refused to start on inconsistent data is left out, and the others
  // compared at once (act_on_refused_members); any other unhealthy voter is the replace rule's.
  ClusterInfo surveyed = o.cluster.info;
  size_t refused = 0;
  for (const auto& m : o.cluster.info.members) {
    if (m.learner || member_healthy(m)) continue;
    if (host_refusing_member(o, m.id) == nullptr) return;  // the replace rule's first
    ++refused;
    std::erase_if(surveyed.members, [&](const MemberInfo& x) { return x.id == m.id; });
  }
  const auto alarms = alarms_in_status(o.cluster.info);
  const bool alarm = std::any_of(alarms.begin(), alarms.end(), [](const MemberAlarm& a) { return a.alarm == "CORRUPT"; });
  if (!alarm && refused == 0 && o.auto_spec.corrupt_check_seconds == 0) return;
  const auto interval = alarm || refused > 0 ? std::chrono::seconds(kCorruptAlarmCheck)
                                             : std::chrono::seconds(o.auto_spec.corrupt_check_seconds);
  const auto now = steady_clock::now();
  if (last_hash_check_ && now - *last_hash_check_ < interval) return;
  last_hash_check_ = now;
  Observation::HashCheck check;
  check.survey = survey_hashes(pool_, surveyed);
  check.verdict = judge_hashes(check.survey);
  if (check.verdict.kind == HashVerdict::Kind::kAgree) {
    spdlog::debug("auto: {}", check.verdict.explanation);
  } else {
    spdlog::warn("auto: comparing the voters' data: {}", check.verdict.explanation);
  }
  if (alarm) o.maintenance = readable_maintenance(*store_);
  o.hashes = std::move(check);
}

// The acting controller names the member whose version changes next. Like a membership change,
// only while this member still leads, and only over the turn read (a conditional write): a
// controller deposed a moment ago, or one that read an older turn, writes nothing.
void Controller::give_version_turn(const Decision& d) {
  if (!still_leads(d)) return;
  auto& conditional = *capability<ConditionalWrites>(*store_);
  if (!conditional.write_if(kAutoVersionTurnKey, version_turn_json(d.turn), turn_version_)) {
    spdlog::info("auto: the version turn changed while this host gave the next one: reading it again");
    return;
  }
  failpoint("auto/version/turn-given");
  record(step_name(d.step), d.reason, d.command, "done: turn " + std::to_string(d.turn.sequence));
}

// This host's turn: its member changes version through `etcdadm upgrade apply`'s phases (the
// whole cluster healthy and able to lose this member, etcd's version rules, a backup, the release
// installed beside the old one, leadership moved away, the switch, the health wait), each phase
// recorded in upgrade.json so that a controller killed part way finishes it when it comes back.
void Controller::change_version(const Decision& d, const Observation& o) {
  recorded_with(d, [&] {
    UpgradeOptions u;
    if (!load_member_state(member_.config_dir, u.member)) {
      throw Error(ErrorKind::kNotFound, "member " + member_.name + " has no state file in " + member_.config_dir);
    }
    u.release = options_.lifecycle.release;
    u.release.version = d.turn.to;
    u.endpoints = other_members(o.hosts);
    u.backup = [&](EtcdClient& cluster) { return backup_through(d, options_.pre_change_backup_age, cluster); };
    const UpgradeResult r = run_upgrade(u);
    return r.from + " -> " + r.to + " (" + version_step_name(r.kind) + ")" + (r.backup.empty() ? "" : ", backup " + r.backup);
  });
  store_view_.reset();
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
  if (auto it = maintenance_failed_.find(key); it != maintenance_failed_.end() && now - it->second < kMaintenanceRetry) {
    wait_once("the last " + step + " by this host failed: trying again " + format_duration_short(std::chrono::duration_cast<std::chrono::seconds>(kMaintenanceRetry)) +
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
      record_now = parse_maintenance_record(read->contents, store_->url() + "/" + kAutoMaintenanceKey);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCorrupt) throw;
      spdlog::warn("auto: rewriting the maintenance record: {}", e.what());
    }
  }
  const int64_t now_unix = unix_now();
  if (const auto& l = record_now.in_progress;
      l && l->host != member_.name && now_unix - l->since_unix < kMaintenanceLeaseSeconds) {
    wait_once(l->host + " runs " + l->step + " since " + format_rfc3339_seconds(SystemTime(std::chrono::seconds(l->since_unix))) +
              " (its lease ends " + std::to_string(kMaintenanceLeaseSeconds) + " s after)");
    return;
  }
  if (d.step == Step::kRecoverSpace) {
    if (auto held = space_recovery_held(record_now, o.auto_spec, now_unix)) {
      wait_once(*held);
      return;
    }
  }
  record_now.in_progress = MaintenanceLease{step, member_.name, now_unix};
  ++record_now.sequence;
  if (!conditional.write_if(kAutoMaintenanceKey, maintenance_record_json(record_now), read ? read->version : "")) {
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

// Updates the maintenance record in the store (read-modify-write: the acting controller alone writes it).
void Controller::update_maintenance(const std::function<void(MaintenanceRecord&)>& change) {
  MaintenanceRecord maintenance;
  try {
    maintenance = read_maintenance(*store_);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt) throw;
    spdlog::warn("auto: rewriting the maintenance record: {}", e.what());
  }
  change(maintenance);
  ++maintenance.sequence;
  write_maintenance(*store_, maintenance);
}

void Controller::record_member_defrag(const Decision& d, const DefragMemberResult& r) {
  update_maintenance([&](MaintenanceRecord& m) {
    m.defrags[r.id] = MemberDefrag{unix_now(), r.db_size_before, r.db_size_after, r.stalled.count()};
  });
  record("defrag", d.reason, d.command,
         fmt::format("done: member {} ({}){}: {} -> {}, its clients waited {} ms", r.name, id_hex(r.id),
                     r.led ? (r.leadership_moved_to.empty() ? ", the only voter" : ", leadership moved to " + r.leadership_moved_to)
                           : "",
                     human_bytes(r.db_size_before), human_bytes(r.db_size_after), r.stalled.count()));
  failpoint("auto/defrag/member-done");
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
    m.last_space_recovery = SpaceRecoveryRecord{unix_now(),       member_.name,        opt.keep_revisions,
                                                r.revision,       r.compacted_to,      r.largest_db_before,
                                                r.largest_db_after, r.quota,           r.disarmed,
                                                r.disarmed ? r.compaction_note : r.not_under_quota};
  });
  store_view_.reset();
  if (!r.disarmed) {
    record(step_name(d.step), d.reason, d.command, "failed: " + r.not_under_quota);
    throw Error(ErrorKind::kUnavailable, "NOSPACE stays armed: " + r.not_under_quota);
  }
  record(step_name(d.step), d.reason, d.command,
         fmt::format("done: compacted to {} ({}), the largest db file {} -> {} of a quota of {}, NOSPACE disarmed",
                     r.compacted_to, r.compaction_note, human_bytes(r.largest_db_before), human_bytes(r.largest_db_after),
                     human_bytes(r.quota)));
}

// A backup of the cluster precedes every membership change: a recent one when the store has it,
// else a new one from this host's member. No backup, no change.
void Controller::backup_before(const Decision& d, std::chrono::seconds max_age) {
  EtcdClient cluster(connection_to(member_, {member_.loopback_client_url()}));
  backup_through(d, max_age, cluster);
}

std::string Controller::backup_through(const Decision& d, std::chrono::seconds max_age, EtcdClient& cluster) {
  PreChangeBackupOptions b;
  b.max_age = max_age;
  b.save = options_.save;
  b.save.preferred_endpoint = member_.loopback_client_url();
  const std::string command = "etcdadm backup save --store " + store_->url();
  try {
    auto r = backup_before_change(cluster, *store_, &catalog_, b);
    if (r.taken) record("backup", std::string("before ") + step_name(d.step) + ": " + d.reason, command, "done: " + r.name);
    return r.name;
  } catch (const Error& e) {
    record("backup", std::string("before ") + step_name(d.step) + ": no change without a backup", command,
           std::string("failed: ") + e.what());
    throw;
  }
}

void Controller::act(const Decision& d, const Observation& o) {
  // A pause written while this round observed wins over what it decided.
  if (d.step != Step::kIdle && d.step != Step::kWait && read_pause(*store_)) {
    spdlog::info("auto: paused while deciding to {}: not acting", step_name(d.step));
    return;
  }
  switch (d.step) {
    case Step::kIdle:
    case Step::kWait:
      if (d.reason != last_wait_reason_) {
        last_wait_reason_ = d.reason;
        if (d.step == Step::kWait) {
          record("wait", d.reason, d.command, "waiting");
        } else {
          spdlog::info("auto: {}", d.reason);
        }
      }
      return;
    case Step::kPlanCluster: {
      auto& conditional = *capability<ConditionalWrites>(*store_);
      const std::string text = cluster_plan_json(d.plan);
      if (conditional.write_if(kAutoPlanKey, text, "")) {
        failpoint("auto/create/planned");
        record("plan-cluster", d.reason, d.command, "done");
        return;
      }
      auto now = conditional.read_versioned(kAutoPlanKey, 1 << 20);
      if (now && now->contents == text) {  // ours: the answer to the write was lost
        record("plan-cluster", d.reason, d.command, "done");
      } else {
        spdlog::info("auto: another host planned the cluster first: following its plan");
      }
      return;
    }
    case Step::kStartPlannedMember:
      recorded(d, [&] { start_planned_member(d.plan); });
      return;
    case Step::kStartLocalMember:
      recorded(d, [&] {
        start_mark_ = init_system_->output_mark(member_);
        last_start_ = steady_clock::now();
        init_system_->start(member_);
      });
      return;
    case Step::kJoinAsAdded:
      recorded(d, [&] { join_as_added(d, o); });
      return;
    case Step::kForgetMember:
      recorded(d, [&] { forget_member(d.set_aside_as); });
      return;
    case Step::kAddMember:
    case Step::kPromoteMember:
    case Step::kRemoveMember:
      change_membership(d);
      return;
    case Step::kPlanRestore:
      plan_restore(d, o);
      return;
    case Step::kRestoreMember:
      // Seconds to minutes (fetch, verify, the log's replay, etcd's start): said when it begins.
      spdlog::info("auto: {} (starting): {}", step_name(d.step), d.reason);
      recorded(d, [&] { restore_planned_member(d.plan); });
      store_view_.reset();
      return;
    case Step::kSetAsideData:
      recorded(d, [&] { set_aside_data(d.plan); });
      return;
    case Step::kFinishRestore:
      recorded(d, [&] {
        EtcdManagerCommand done;
        done.key = d.plan.command_key;
        remove_etcd_manager_command(*store_, done);
      });
      store_view_.reset();
      return;
    case Step::kGiveVersionTurn:
      give_version_turn(d);
      return;
    case Step::kChangeVersion:
      change_version(d, o);
      return;
    case Step::kDefragment:
    case Step::kRecoverSpace:
      maintain(d, o);
      return;
    case Step::kDisarmCorrupt:
      disarm_corrupt(d);
      return;
    case Step::kRenewCerts:
    case Step::kCaSwitch:
      maintain(d, o);
      return;
    case Step::kCaReissue:
      ca_reissue(d, o);
      return;
    case Step::kStartCaRotation:
      if (still_leads(d)) start_ca_rotation(d);
      return;
    case Step::kCompleteCaRotation:
      if (still_leads(d)) {
        recorded(d, [&] {
          if (!complete_ca_rotation(*store_, *o.ca_rotation, unix_now())) {
            spdlog::info("auto: the CA rotation record changed while it was marked completed: reading it again next round");
          }
        });
        store_view_.reset();
      }
      return;
    case Step::kMarkCreated:
      try {
        store_->write_small(kEtcdManagerClusterCreatedKey,
                            etcd_manager_cluster_created_json(to_unix_micros(std::chrono::system_clock::now()) * 1000),
                            /*overwrite=*/false);
        record("mark-created", d.reason, d.command, "done");
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kAlreadyExists) throw;  // another member's controller was first
      }
      return;
  }
}

void Controller::write_host_record(const Observation& o, const Decision& d) {
  HostRecord h;
  h.name = member_.name;
  h.peer_url = member_.peer_url();
  h.client_url = member_.client_url();
  h.ca_sha256 = ca_sha256_;
  h.etcdadm_version = ETCDADM_VERSION;
  h.data = o.local.data;
  h.cluster_token = o.local.cluster_token;
  h.member_id = o.local.member_id;
  h.etcd_running = o.local.etcd_running;
  h.waiting_for = d.step == Step::kIdle || d.step == Step::kWait ? d.reason : "";
  h.certs_expire_unix = o.local.certs_expire_unix;
  h.ca_expires_unix = o.local.ca_expires_unix;
  h.etcd_refused = o.local.etcd_refused;
  if (o.ca_rotation) {
    h.ca_rotation_step = ca_rotation_step(o.ca_rotation_state);
    if (!h.ca_rotation_step.empty()) h.ca_rotation_id = o.ca_rotation->id;
  }
  HostRecord compare = h;
  compare.heartbeat_unix = last_written_.heartbeat_unix;
  compare.sequence = last_written_.sequence;
  const bool due = steady_clock::now() - last_heartbeat_ >= options_.heartbeat;
  if (compare == last_written_ && !due) return;
  h.heartbeat_unix = unix_now();
  h.sequence = ++sequence_;
  store_->write_small(host_record_key(h.name), host_record_json(h), /*overwrite=*/true);
  last_written_ = h;
  last_heartbeat_ = steady_clock::now();
}

std::string Controller::metrics_text() const {
  Gauges g;
  {
    std::lock_guard<std::mutex> lock(gauges_mu_);
    g = gauges_;
  }
  std::string out;
  auto gauge = [&](const char* name, const char* help, const std::string& value, const char* type = "gauge") {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + value + "\n";
  };
  gauge("etcdadm_auto_acting", "1 while this host's controller acts for the cluster (its member is the Raft leader).", g.acting ? "1" : "0");
  gauge("etcdadm_auto_waiting", "1 while the controller waits for a person or another host (auto status says for what).", g.waiting ? "1" : "0");
  gauge("etcdadm_auto_total_loss",
        "1 while the store says a cluster was created, no member answers and no host holds its data: restore a backup "
        "(etcdadm etcd-manager restore-backup latest).",
        g.total_loss ? "1" : "0");
  gauge("etcdadm_auto_paused", "1 while the controllers are paused (etcdadm auto pause).", g.paused ? "1" : "0");
  gauge("etcdadm_auto_last_round_timestamp_seconds", "Unix time of the controller's last completed round.",
        std::to_string(g.last_round_unix));
  gauge("etcdadm_auto_failed_rounds_total", "Rounds that failed (the store or the cluster did not answer).",
        std::to_string(g.failed_rounds), "counter");
  if (g.ca_expires_unix > 0) {
    gauge("etcdadm_auto_ca_expiry_timestamp_seconds",
          "Unix time when the cluster CA on this host expires (auto status warns within the spec's caWarnBeforeSeconds).",
          std::to_string(g.ca_expires_unix));
  }
  return out;
}

Decision Controller::tick() {
  Observation o = observe();
  Decision d = decide(o, new_cluster_token());
  d.hurry = hurried_round(o);
  // A rotation under way moves through the other hosts' records: the store is read every round.
  if (o.ca_rotation && o.ca_rotation->completed_unix == 0) d.settled = false;
  {
    std::lock_guard<std::mutex> lock(gauges_mu_);
    gauges_.acting = is_acting(o);
    gauges_.waiting = d.step == Step::kWait;
    gauges_.total_loss = d.total_loss;
    gauges_.paused = o.pause.has_value();
    gauges_.last_round_unix = o.now_unix;
    gauges_.ca_expires_unix = o.local.ca_expires_unix;
  }
  // The record first: a host that registers is counted by the others before it acts.
  write_host_record(o, d);
  act(d, o);
  pool_.forget_unused();
  return d;
}

void Controller::run() {
  InterruptibleWork work;
  spdlog::info("auto: controller of {} on store {} (CA {}...)", member_.name, store_->url(), ca_sha256_.substr(0, 12));
  auto stopping = [this] { return interrupted() || stop_requested_; };
  int rounds_without_pause = 0;
  while (!stopping()) {
    bool at_once = false;
    auto pause = options_.interval;
    try {
      Decision d = tick();
      settled_ = d.settled;
      if (d.hurry) pause = std::min(pause, std::chrono::duration_cast<std::chrono::milliseconds>(kHurriedRound));
      // A plan, the marker or a version turn just written (or found written by another host) is followed at
      // once: this host's own part of it comes next, not an interval later. At most three rounds
      // in a row, so that nothing can spin.
      at_once = (d.step == Step::kPlanCluster || d.step == Step::kPlanRestore || d.step == Step::kMarkCreated ||
                 d.step == Step::kGiveVersionTurn) &&
                ++rounds_without_pause <= 3;
    } catch (const std::exception& e) {
      // Whatever failed (an Error, or a library's exception on input no check foresaw), the round
      // acted on nothing more: count it and start over, never end the controller's thread.
      if (const auto* err = dynamic_cast<const Error*>(&e); err != nullptr && err->kind() == ErrorKind::kInterrupted) break;
      settled_ = false;
      store_view_.reset();
      {
        std::lock_guard<std::mutex> lock(gauges_mu_);
        ++gauges_.failed_rounds;
      }
      spdlog::warn("auto: this round failed, nothing more is done until the next: {}", e.what());
    }
    if (at_once) continue;
    rounds_without_pause = 0;
    for (auto until = steady_clock::now() + pause; steady_clock::now() < until && !stopping();) {
      std::this_thread::sleep_for(std::min<steady_clock::duration>(std::chrono::milliseconds(100), until - steady_clock::now()));
    }
  }
  const int sig = interrupt_signal();
  spdlog::info("auto: stopped ({}); this host's etcd keeps running", sig == 15 ? "SIGTERM" : sig == 2 ? "SIGINT" : "asked to");
}

}  // namespace etcdadm

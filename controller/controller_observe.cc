// What a controller observes each round (Controller::observe): the store (read every round while
// anything moves, every idle interval while the cluster is as the spec says), this host's data dir
// and etcd, and the cluster through the members' client URLs.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"
#include "common/fs.h"
#include "common/timefmt.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/member_health.h"
#include "etcdadm/pki.h"
#include "etcdadm/upgrade/upgrade.h"
#include "store/blob_capabilities.h"
#include "store/etcd_manager.h"

namespace etcdadm {

using namespace controller_internal;
using std::chrono::steady_clock;

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

LocalView Controller::observe_local() {
  LocalView v;
  AutoLocalState state = read_auto_local_state(member_.config_dir);
  const AutoLocalState before = state;
  const bool has_data = !is_empty_data_dir(member_.data_dir) && path_exists(member_.data_dir + "/member");
  // From the moment etcd wrote its member dir, its raft log counts: empty data is lost data.
  if (has_data) state.member_started = true;
  v.data = has_data ? DataState::kMember : state.member_started ? DataState::kLost : DataState::kEmpty;
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
    spdlog::warn(
        "auto: etcd refused to start this host's member: its initial corruption check found the data differs from a "
        "peer's");
    refused_ = kEtcdRefusedInconsistent;
  }
  v.etcd_refused = refused_;
  if (last_start_) v.seconds_since_start = seconds_since(*last_start_);
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
    o.unhealthy_seconds[m.id] = seconds_since(still[m.id]);
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
  o.quorum_seen_seconds =
      held_for_seconds(quorum_since_, o.spec && (!o.plan || restore_unplanned || (lost && o.auto_spec.auto_restore)) &&
                                          live_same_ca >= quorum_of(o.spec->member_count));
  o.unanswered_seconds = held_for_seconds(unanswered_since_, o.created_marker && !o.cluster.answered);
  o.total_loss_seconds = held_for_seconds(total_loss_since_, lost);
  if (lost && o.spec && o.auto_spec.auto_restore && o.total_loss_seconds >= o.auto_spec.auto_restore_delay_seconds) {
    o.auto_restore = auto_restore_candidate(o.now_unix);
  }
  return o;
}

// The client URLs of the other hosts that hold a member: more ways to reach the cluster.
std::vector<std::string> Controller::other_members(const std::vector<HostView>& hosts) const {
  std::vector<std::string> out;
  for (const auto& h : hosts) {
    if (h.record.name != member_.name && h.record.data == DataState::kMember) out.push_back(h.record.client_url);
  }
  return out;
}

ConnectionConfig Controller::members_connection(const std::vector<HostView>& hosts) const {
  std::vector<std::string> endpoints = {member_.loopback_client_url()};
  for (const auto& url : other_members(hosts)) endpoints.push_back(url);
  return connection_to(member_, endpoints);
}

}  // namespace etcdadm

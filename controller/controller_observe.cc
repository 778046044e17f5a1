// What a controller observes each round (Controller::observe): the store (read every round while
// anything moves, every idle interval while the cluster is as the spec says), this host's data dir
// and etcd, and the cluster through the members' client URLs.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>

#include "changelog/segment.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/member_health.h"
#include "etcdadm/pki.h"
#include "etcdadm/upgrade/upgrade.h"
#include "restore/resolve.h"
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
    if (first) s.first = now;
    if (!first && s.sequence != r.sequence) {
      s.changed = now;
      // Written at most a round (and a store read) ago: its heartbeat against this clock is the
      // difference of the two clocks, give or take that.
      if (r.name != member_.name && r.heartbeat_unix > 0) clock_skew_[r.name] = r.heartbeat_unix - now_unix;
    }
    s.sequence = r.sequence;
    const bool moving = s.changed != steady_clock::time_point{} && now - s.changed < options_.host_timeout;
    const bool fresh = std::llabs(now_unix - r.heartbeat_unix) <= options_.host_timeout.count();
    out.push_back(HostView{r, r.name == member_.name || moving || fresh});
  }
  return out;
}

int64_t Controller::known_for(const std::string& identity) {
  const auto now = steady_clock::now();
  auto [it, first] = first_known_.try_emplace(identity, now);
  // A day is longer than any hold or window counted this way: older identities are forgotten.
  if (first && first_known_.size() > 64) {
    std::erase_if(first_known_, [&](const auto& k) { return now - k.second > std::chrono::hours(24); });
  }
  return seconds_since(it->second);
}

std::string Controller::name_held_elsewhere() const {
  if (!record_version_.empty() || !store_view_) return "";
  for (const auto& r : store_view_->hosts) {
    if (r.name != member_.name || r.host_id.empty() || r.host_id == host_id_) continue;
    const auto it = seen_.find(r.name);
    if (it == seen_.end()) return "";
    const auto now = steady_clock::now();
    const auto quiet = now - (it->second.changed == steady_clock::time_point{} ? it->second.first : it->second.changed);
    if (quiet >= options_.host_timeout) return "";  // its holder is gone: the name may be taken over
    return "another host runs as " + member_.name + " (host ID " + r.host_id + ", peer URL " + r.peer_url + ", data " +
           data_state_name(r.data) + "); this host (host ID " + host_id_ +
           ") does nothing under that name while its record keeps changing, and takes the name over only once it "
           "has not changed for " +
           std::to_string(options_.host_timeout.count()) + " s";
  }
  return "";
}

LocalView Controller::observe_local() {
  LocalView v;
  AutoLocalState state = read_auto_local_state(member_.config_dir);
  const AutoLocalState before = state;
  bool has_data = false;
  try {
    has_data = !is_empty_data_dir(member_.data_dir) && path_exists(member_.data_dir + "/member");
  } catch (const Error& e) {
    v.data_problem = "reading " + member_.data_dir + " failed: " + e.what();
  }
  uint64_t device = 0;
  try {
    device = device_of_path(member_.data_dir);
  } catch (const Error& e) {
    if (v.data_problem.empty()) v.data_problem = e.what();
  }
  // From the moment etcd wrote its member dir, its raft log counts: empty data is lost data, unless
  // the dir is not where that data was (a volume not mounted yet). The device is recorded from the
  // moment this host made a member there (creation, join, restore), before etcd wrote anything.
  if (has_data) {
    state.member_started = true;
    state.data_device = device;
  } else if (v.data_problem.empty() && state.data_device != 0 && device != state.data_device) {
    v.data_problem = member_.data_dir + " is empty and not on the device its member's data was on (" +
                     std::to_string(state.data_device) + ", now " + std::to_string(device) +
                     "): its volume is not mounted (yet)?";
  }
  v.data = !v.data_problem.empty() ? DataState::kUnavailable
           : has_data              ? DataState::kMember
           : state.member_started  ? DataState::kLost
                                   : DataState::kEmpty;
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
    learner_since_.clear();
    unhealthy_baseline_.clear();
    return;
  }
  const auto now = steady_clock::now();
  std::map<uint64_t, steady_clock::time_point> still, learners;
  std::map<uint64_t, uint64_t> baselines;
  for (const auto& m : o.cluster.info.members) {
    if (m.learner) {
      auto it = learner_since_.find(m.id);
      learners[m.id] = it == learner_since_.end() ? now : it->second;
      o.learner_seconds[m.id] = seconds_since(learners[m.id]);
    }
    if (member_healthy(m)) continue;
    auto it = unhealthy_since_.find(m.id);
    still[m.id] = it == unhealthy_since_.end() ? now : it->second;
    o.unhealthy_seconds[m.id] = seconds_since(still[m.id]);
    // Its own host's record: the sequence the store held at the first read after the member became
    // unhealthy is the baseline; only a record written after it speaks of the member's state since.
    const HostView* own = nullptr;
    for (const auto& h : o.hosts) {
      if (h.record.name != o.self && h.record.member_id == m.id) own = &h;
    }
    if (own == nullptr) continue;
    if (auto b = unhealthy_baseline_.find(m.id); b != unhealthy_baseline_.end()) {
      baselines[m.id] = b->second;
      if (own->record.sequence > b->second) o.rewritten_since_unhealthy.insert(m.id);
    } else if (store_view_ && store_view_->read_at > still[m.id]) {
      baselines[m.id] = own->record.sequence;
    }
  }
  unhealthy_since_ = std::move(still);
  unhealthy_baseline_ = std::move(baselines);
  learner_since_ = std::move(learners);
  std::erase_if(replaced_at_,
                [&](const auto& r) { return now - r.second >= std::chrono::seconds(kReplaceDampSeconds); });
  for (const auto& [url, at] : replaced_at_) o.replaced_seconds_ago[url] = seconds_since(at);
}

// One shared record read: a record that does not parse, or asks what the controllers never do,
// becomes a problem named in `v` (rule Q) instead of failing the round, so that this host still
// writes its heartbeat and keeps its own member running. A store that cannot be read at all is one
// problem too. Records the record policy refuses (no valid authenticator of this cluster's CA): a
// spec is a problem; a plan and a restore command without its approval are taken as absent
// (`v.refused`, said once each); a host record is one that may hold data (`unreadable_hosts`).
Controller::StoreView Controller::read_store_view(const std::string& store_url) {
  StoreView v;
  v.read_at = steady_clock::now();
  load_keyring();
  const RecordPolicy policy = record_policy();
  auto guarded = [&](const std::string& what, const std::function<void()>& read) {
    try {
      read();
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCorrupt) throw;
      v.problems.push_back(what + ": " + e.what());
    }
  };
  try {
    // The listing first: a store that does not exist fails it (kNotFound), before a conditional
    // read (a lock file beside its record) could make a vanished local store's directory again.
    std::vector<std::string> unreadable;
    v.hosts = read_host_records(*store_, &unreadable, &policy);
    for (const auto& u : unreadable)
      spdlog::warn("a host record is not taken (counted as a host that may hold data): {}", u);
    v.unreadable_hosts = unreadable;
    guarded(kEtcdManagerClusterSpecKey, [&] { v.spec = read_etcd_manager_cluster_spec(*store_); });
    std::optional<AutoSpec> signed_spec;
    bool spec_taken = false;
    guarded(kAutoSpecKey, [&] {
      signed_spec = read_auto_spec(*store_, &policy);
      v.auto_spec = signed_spec.value_or(AutoSpec{});
      spec_taken = true;
    });
    // The etcd-manager spec is obeyed only as seed signed it, and never a generation older than
    // one a host obeyed (this one, or any whose record says so).
    uint64_t highest = spec_generation_;
    for (const auto& h : v.hosts) highest = std::max(highest, h.spec_generation);
    if (v.spec && spec_taken) {
      if (std::string p = spec_authority_problem(*v.spec, signed_spec, options_.accept_unsigned_records, highest);
          !p.empty())
        v.problems.push_back(p);
      else if (signed_spec)
        v.spec_generation = signed_spec->generation;
    }
    guarded(kAutoPauseKey, [&] { v.pause = read_pause(*store_); });
    v.created_marker = read_etcd_manager_cluster_created(*store_).has_value();
    guarded(kAutoPlanKey, [&] {
      if (auto plan = capability<ConditionalWrites>(*store_)->read_versioned(kAutoPlanKey, 1 << 20)) {
        // Kept as the base of the next plan's conditional write, whether it is taken or not.
        v.plan_version = plan->version;
        if (std::string why = policy.refusal(kAutoPlanKey, plan->contents); !why.empty()) {
          v.refused.push_back(why);  // as if there were none: no host starts or restores from it
          return;
        }
        v.plan = parse_cluster_plan(plan->contents, store_url + "/" + kAutoPlanKey);
      }
    });
    // The queue as etcd-manager reads it; a command this etcdadm cannot read or obey stops it.
    guarded("the command queue (control/)", [&] {
      for (auto& cmd : list_etcd_manager_commands(*store_)) {
        if (!cmd.restore_backup) continue;
        const auto& into = cmd.restore_backup->cluster_spec;
        if (into.member_count < 0 || into.member_count > kMaxClusterMembers ||
            (!into.etcd_version.empty() && !is_etcd_release(into.etcd_version))) {
          v.problems.push_back(cmd.key + ": the restore asks for " + std::to_string(into.member_count) +
                               " members of etcd \"" + into.etcd_version + "\", which the controllers never run (1-" +
                               std::to_string(kMaxClusterMembers) + " members, a release major.minor.patch)");
        }
        if (!options_.accept_unsigned_records) {
          std::optional<RestoreApproval> approval;
          try {
            approval = read_restore_approval(*store_, cmd.key, &policy);
          } catch (const Error& e) {
            if (e.kind() != ErrorKind::kCorrupt) throw;
            v.refused.push_back(e.what());
            break;
          }
          if (std::string why = restore_approval_problem(cmd, approval); !why.empty()) {
            v.refused.push_back(why);  // as if it were not queued
            break;
          }
          v.restore_db_sha256 = approval->backup_db_sha256;
        }
        v.restore_command = std::move(cmd);
        break;
      }
    });
    if (!v.auto_spec.defrag_schedule.empty()) {
      // At worst every member is defragmented once more, and the record written whole again.
      v.maintenance = readable_maintenance(*store_, policy);
    }
    guarded(kAutoCaRotationKey, [&] { v.ca_rotation = read_ca_rotation(*store_); });
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInterrupted) throw;
    StoreView down;
    down.read_at = v.read_at;
    down.reachable = false;
    down.problems.push_back("the store " + store_url + " cannot be read: " + e.what());
    return down;
  }
  return v;
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
  // says, or a wait is for a person (a resume, a record fixed), the store is read every idle
  // interval and the members every round; a store that could not be read is read again at once.
  if (!store_view_ || !settled_ || !store_view_->reachable ||
      steady_clock::now() - store_view_->read_at >= options_.idle_interval) {
    store_view_ = read_store_view(o.store_url);
  }
  o.spec = store_view_->spec;
  o.auto_spec = store_view_->auto_spec;
  o.pause = store_view_->pause;
  o.created_marker = store_view_->created_marker;
  o.plan = store_view_->plan;
  o.restore_command = store_view_->restore_command;
  o.restore_db_sha256 = store_view_->restore_db_sha256;
  o.record_problems = store_view_->problems;
  for (const auto& why : store_view_->refused) refuse_record(why);
  spec_generation_ = std::max(spec_generation_, store_view_->spec_generation);
  o.unreadable_host_records = store_view_->unreadable_hosts;
  o.maintenance = store_view_->maintenance;
  o.hosts = judge_liveness(store_view_->hosts, o.now_unix);
  for (const auto& h : o.hosts) {
    if (auto it = clock_skew_.find(h.record.name);
        h.live && it != clock_skew_.end() && std::llabs(it->second) > std::llabs(o.clock_skew_seconds)) {
      o.clock_skew_seconds = it->second;
    }
  }
  // Said once, and again when it moves by 10 s or more (the estimate itself wanders by a round).
  if (std::llabs(o.clock_skew_seconds) < kClockSkewReported) {
    reported_skew_ = 0;
  } else if (std::llabs(o.clock_skew_seconds - reported_skew_) >= 10) {
    spdlog::warn(
        "auto: another host's clock is {} s {} this host's: no hold or lease is cut short by it, but the "
        "times in events and records disagree, and an auto-restore's revision bump is sized wider (run NTP "
        "on every host)",
        std::llabs(o.clock_skew_seconds), o.clock_skew_seconds > 0 ? "ahead of" : "behind");
    reported_skew_ = o.clock_skew_seconds;
  }
  if (store_view_->plan) o.plan_seen_seconds = known_for("plan " + std::to_string(store_view_->plan->sequence));
  o.name_conflict = name_held_elsewhere();
  o.local = observe_local();
  if ((o.ca_rotation = store_view_->ca_rotation)) {
    o.ca_rotation_state = local_ca_rotation_state(*o.ca_rotation, member_.certs_dir, member_.config_dir);
    if (o.ca_rotation_state != CaRotationState::kOtherCa && o.ca_rotation_state != CaRotationState::kSwitched) {
      try {
        // The hosts that switched already sign with the new key.
        rotation_key_pem_ = open_ca_rotation(*o.ca_rotation, member_.certs_dir).key_pem;
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
    me.host_id = host_id_;
    me.peer_url = o.self_peer_url;
    me.client_url = o.self_client_url;
    me.ca_sha256 = ca_sha256_;
    me.data = o.local.data;
    o.hosts.push_back(HostView{me, true});
  }
  o.cluster = observe_cluster(o.hosts, o.local);
  o.replaced_cluster_leader = replaced_cluster_leader(o);
  o.removal_seen_seconds = held_for_seconds(removal_since_, local_member_removed(o));
  track_health(o);
  // With a shared record this host cannot act on, only its own member is looked after (rule Q):
  // nothing more is read from the store.
  if (!o.record_problems.empty() || (o.spec && !cluster_spec_problem(*o.spec).empty())) return o;
  observe_version_change(o);
  if (!o.record_problems.empty()) return o;
  observe_hashes(o);
  // Under NOSPACE the last recovery's outcome decides whether to try again (the acting controller
  // may have changed since: the record is in the store). Read only then.
  if (o.spec && o.auto_spec.defrag_schedule.empty()) {
    const auto alarms = alarms_in_status(o.cluster.info);
    if (std::any_of(alarms.begin(), alarms.end(), [](const MemberAlarm& a) { return a.alarm == "NOSPACE"; })) {
      o.maintenance = readable_maintenance(*store_, record_policy());
    }
  }
  if (const auto& r = o.maintenance.last_space_recovery) {
    o.space_recovery_seen_seconds = known_for("space recovery " + std::to_string(r->unix) + " " + r->host);
  }
  for (const auto& [id, c] : o.maintenance.corrupt) {
    o.corrupt_seen_seconds[id] = known_for("corrupt " + std::to_string(id) + " " + std::to_string(c.unix));
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
  if (o.plan && o.cluster.answered && o.cluster.info.leader_id != 0) {
    led_since_plan_sequence_ = std::max(led_since_plan_sequence_, o.plan->sequence);
  }
  o.led_since_plan = o.plan && led_since_plan_sequence_ >= o.plan->sequence;
  o.quorum_lost_seconds = held_for_seconds(quorum_lost_since_, quorum_loss(o).has_value());
  if (o.quorum_lost_seconds == 0 && !quorum_lost_since_) {
    quorum_loss_baseline_.reset();
  } else if (!quorum_loss_baseline_) {
    if (store_view_ && quorum_lost_since_ && store_view_->read_at > *quorum_lost_since_) {
      quorum_loss_baseline_.emplace();
      for (const auto& h : o.hosts) (*quorum_loss_baseline_)[h.record.name] = h.record.sequence;
    }
  } else {
    for (const auto& h : o.hosts) {
      const auto b = quorum_loss_baseline_->find(h.record.name);
      if (b == quorum_loss_baseline_->end() || h.record.sequence > b->second) {
        o.rewritten_since_quorum_loss.insert(h.record.name);
      }
    }
  }
  if (o.spec && o.quorum_lost_seconds >= o.auto_spec.replace_after_seconds)
    o.quorum_loss_log_end = quorum_loss_log_end(o);
  if (restore_unplanned && o.quorum_lost_seconds > 0) o.restore_backup_revision = queued_backup_revision(o);
  if (lost && o.spec && o.auto_spec.auto_restore && o.total_loss_seconds >= o.auto_spec.auto_restore_delay_seconds) {
    o.auto_restore = auto_restore_candidate(o.now_unix, o.clock_skew_seconds);
  }
  return o;
}

// The last revision of the lost cluster's change log (its tagged segments), for the report of a
// quorum lost for good: read at most once a minute (a listing of the cluster's log).
int64_t Controller::quorum_loss_log_end(const Observation& o) {
  const auto now = std::chrono::steady_clock::now();
  if (quorum_loss_log_read_ && now - *quorum_loss_log_read_ < kQuorumLossLogRead) return quorum_loss_log_end_;
  quorum_loss_log_read_ = now;
  try {
    int64_t end = 0;
    for (const auto& s : changelog::list_segments(*store_, id_hex(o.cluster.info.cluster_id))) {
      if (segment_accepted(s)) end = std::max(end, s.last_revision);
    }
    quorum_loss_log_end_ = end;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInterrupted) throw;
    spdlog::warn("auto: the change log of the cluster could not be listed: {}", e.what());
  }
  return quorum_loss_log_end_;
}

// The revision of the queued restore's backup, as its metadata records it: read once per command
// (a listing of the store), none when it records none or cannot be read (said in the log).
std::optional<int64_t> Controller::queued_backup_revision(const Observation& o) {
  const std::string& backup = o.restore_command->restore_backup->backup;
  if (queued_backup_revision_ && queued_backup_revision_->first == o.restore_command->key + " " + backup) {
    return queued_backup_revision_->second;
  }
  std::optional<int64_t> revision;
  try {
    revision = find_backup(*store_, catalog_, backup).revision;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInterrupted) throw;
    spdlog::warn("auto: the revision of backup {} (queued to restore) could not be read: {}", backup, e.what());
    return std::nullopt;
  }
  queued_backup_revision_.emplace(o.restore_command->key + " " + backup, revision);
  return revision;
}

// The client URLs of the other hosts that hold a member: more ways to reach the cluster.
std::string Controller::replaced_cluster_leader(const Observation& o) {
  if (!o.plan || !o.plan->restores() || o.plan->replaces_cluster_id == 0 || o.local.etcd_running ||
      o.plan->member(o.self) == nullptr)
    return "";
  std::vector<std::string> endpoints = other_members(o.hosts);
  if (o.cluster.answered && o.cluster.info.cluster_id == o.plan->replaces_cluster_id) {
    for (const auto& m : o.cluster.info.members) {
      if (!m.client_urls.empty() &&
          std::find(endpoints.begin(), endpoints.end(), m.client_urls.front()) == endpoints.end())
        endpoints.push_back(m.client_urls.front());
    }
  }
  for (const auto& ep : endpoints) {
    try {
      const auto st = pool_.client(ep).status(ep);
      if (st.header().cluster_id() == o.plan->replaces_cluster_id && st.leader() != 0) return ep;
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kInterrupted) throw;
    }
  }
  return "";
}

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

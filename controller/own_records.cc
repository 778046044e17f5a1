// This host's own records: its local state (<config-dir>/etcdadm-auto.json), its host ID
// (<config-dir>/etcdadm-auto-host-id), and its host record in the store, written by conditional
// writes so that the name it runs under is held by its host ID alone (docs/self-management.md,
// "A host").
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/json_fields.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "store/blob_capabilities.h"

namespace etcdadm {

using json = nlohmann::json;
using namespace controller_internal;
using std::chrono::steady_clock;

namespace {

constexpr const char* kLocalStateFile = "etcdadm-auto.json";
constexpr const char* kHostIdFile = "etcdadm-auto-host-id";

}  // namespace

AutoLocalState read_auto_local_state(const std::string& config_dir) {
  AutoLocalState s;
  const std::string path = config_dir + "/" + kLocalStateFile;
  if (!path_exists(path)) return s;
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kCorrupt, path + " is not JSON: " + e.what(),
                "remove it only if this host never ran a member");
  }
  if (!j.is_object()) throw Error(ErrorKind::kCorrupt, path + " is not a JSON object");
  s.cluster_token = string_field(j, "clusterToken", path);
  s.member_started = bool_field(j, "memberStarted", path);
  s.member_id = integer_field<uint64_t>(j, "memberID", path).value_or(0);
  s.cluster_id = integer_field<uint64_t>(j, "clusterID", path).value_or(0);
  s.plan_sequence = integer_field<uint64_t>(j, "planSequence", path).value_or(0);
  s.data_device = integer_field<uint64_t>(j, "dataDevice", path).value_or(0);
  return s;
}

std::string load_or_make_host_id(const std::string& config_dir) {
  const std::string path = config_dir + "/" + kHostIdFile;
  if (path_exists(path)) {
    std::string id = read_file(path);
    if (!id.empty() && id.back() == '\n') id.pop_back();
    if (!is_host_id(id)) {
      throw Error(ErrorKind::kCorrupt, path + " is not a host ID (32 hex digits)",
                  "remove it: this host then claims its name as a new host, 90 s after its old record last changed");
    }
    return id;
  }
  const std::string id = new_host_id();
  make_dirs(config_dir, 0755);
  write_file_atomic(path, id + "\n", 0644, /*overwrite=*/false);
  spdlog::info("auto: this host's ID is {} ({})", id, path);
  return id;
}

void write_auto_local_state(const std::string& config_dir, const AutoLocalState& s) {
  make_dirs(config_dir, 0755);
  json j = {{"clusterToken", s.cluster_token}, {"memberStarted", s.member_started}, {"memberID", s.member_id},
            {"clusterID", s.cluster_id},       {"planSequence", s.plan_sequence},   {"dataDevice", s.data_device}};
  write_file_atomic(config_dir + "/" + kLocalStateFile, j.dump(2) + "\n", 0600, /*overwrite=*/true);
}

void Controller::write_host_record(const Observation& o, const Decision& d) {
  HostRecord h;
  h.name = member_.name;
  h.host_id = host_id_;
  h.peer_url = member_.peer_url();
  h.client_url = member_.client_url();
  h.ca_sha256 = ca_sha256_;
  h.etcdadm_version = ETCDADM_VERSION;
  h.data = o.local.data;
  h.cluster_token = o.local.cluster_token;
  h.member_id = o.local.member_id;
  h.etcd_running = o.local.etcd_running;
  h.has_leader = o.local.has_leader;
  h.waiting_for = d.step == Step::kIdle || d.step == Step::kWait ? d.reason : "";
  h.certs_expire_unix = o.local.certs_expire_unix;
  h.ca_expires_unix = o.local.ca_expires_unix;
  h.etcd_refused = o.local.etcd_refused;
  h.spec_generation = spec_generation_;
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
  write_own_record(h);
  last_written_ = h;
  last_heartbeat_ = steady_clock::now();
}

// The name is this host's once its record is written by a conditional write: create-if-absent, over
// a record of its own host ID (or of none: written before IDs), or over another host's record
// that did not change for a host timeout as this controller watched it (name_held_elsewhere). From
// then on every write is replace-if-match against the version this host wrote last, so a second
// host writing under the same name is noticed by both: this one stops (kInUse) and finds it live.
void Controller::write_own_record(const HostRecord& h) {
  auto& conditional = *capability<ConditionalWrites>(*store_);
  const std::string key = host_record_key(h.name);
  const std::string text = keyring_.sign(key, host_record_json(h));
  if (record_version_.empty()) {
    std::string expected;
    if (auto current = conditional.read_versioned(key, 1 << 20)) {
      HostRecord held;
      try {
        record_policy().require(key, current->contents);
        held = parse_host_record(current->contents, store_->url() + "/" + key);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kCorrupt) throw;
        held.host_id.clear();  // an unreadable or forged record holds nothing: written over
      }
      if (!held.host_id.empty() && held.host_id != host_id_) {
        auto it = seen_.find(h.name);
        if (it == seen_.end() || it->second.sequence != held.sequence) {
          throw Error(ErrorKind::kInUse, "host record " + key + " changed while this host watched it: not claiming it");
        }
        spdlog::warn("auto: taking over the name {} from host ID {} (peer URL {}): its record has not changed for {} s",
                     h.name, held.host_id, held.peer_url, options_.host_timeout.count());
      }
      expected = current->version;
    }
    auto written = conditional.write_if(key, text, expected);
    if (!written) throw Error(ErrorKind::kInUse, "host record " + key + " changed while this host claimed it");
    record_version_ = *written;
    return;
  }
  if (auto written = conditional.write_if(key, text, record_version_)) {
    record_version_ = *written;
    return;
  }
  // Not as this host left it: its own write whose answer was lost (the record is then exactly
  // what it wrote: every write has a new sequence), or another host's.
  if (auto current = conditional.read_versioned(key, 1 << 20); current && current->contents == text) {
    record_version_ = current->version;
    return;
  }
  record_version_.clear();
  throw Error(ErrorKind::kInUse, "another writer replaced this host's record " + key +
                                     ": two hosts may run under the name " + h.name + "; checked again next round");
}

}  // namespace etcdadm

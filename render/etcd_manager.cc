#include "render/etcd_manager.h"

#include "common/timefmt.h"
#include "render/json.h"

namespace etcdadm::render {

namespace {

using json = nlohmann::json;

json spec_json(const EtcdManagerClusterSpec& s) {
  return {{"memberCount", s.member_count}, {"etcdVersion", s.etcd_version}};
}

std::string describe(const EtcdManagerClusterSpec& s) {
  return std::to_string(s.member_count) + " member" + (s.member_count == 1 ? "" : "s") + ", etcd " +
         (s.etcd_version.empty() ? "(no version)" : s.etcd_version);
}

// etcd-manager's timestamps are nanoseconds.
std::string when(int64_t unix_nanos) {
  return format_rfc3339_seconds(
      SystemTime(std::chrono::duration_cast<SystemTime::duration>(std::chrono::nanoseconds(unix_nanos))));
}

// What to do after queueing a restore: etcd-manager reads its queue when it starts.
constexpr const char* kRestartHint =
    "etcd-manager reads the command when it starts: restart etcd-manager on every control-plane node (kops: "
    "`kubectl -n kube-system delete pod -l k8s-app=etcd-manager-main`, or `...-events` for the events cluster). It "
    "then creates a new, empty cluster, restores the backup into it and deletes the command; the API servers see the "
    "restored data once it is done.";
constexpr const char* kAutoRestoreHint =
    "This store's hosts run `etcdadm auto`: their controllers plan the restore within a round or two (30 s while "
    "idle), then every listed host stops its member, sets its data aside, restores the backup natively (revisions "
    "kept) and starts; the command is deleted once the restored cluster has a leader. Follow it with `etcdadm auto "
    "status`.";

}  // namespace

json cluster_spec_json(const EtcdManagerClusterSpec& spec, std::optional<int64_t> created) {
  json j = spec_json(spec);
  // etcd-manager records that the cluster was created, and usually when (0: it did not say).
  j["clusterCreated"] = created.has_value();
  j["clusterCreatedAt"] = created ? time_json(*created / 1000) : json(nullptr);
  return j;
}

std::string cluster_spec_text(const EtcdManagerClusterSpec& spec, std::optional<int64_t> created) {
  return "Cluster spec: " + describe(spec) + "\n" + "Cluster created: " +
         (created ? (*created ? when(*created) : std::string("yes"))
                  : std::string("no (etcd-manager will create a new cluster)")) +
         "\n";
}

std::string configured_cluster_spec_text(const EtcdManagerClusterSpec& spec) {
  return "Cluster spec set: " + describe(spec) + "\n";
}

json etcd_manager_listings_json(const std::vector<EtcdManagerListing>& listed) {
  json out = json::array();
  for (const auto& l : listed) {
    out.push_back(
        {{"backup", l.name}, {"restorable", !l.blocker}, {"reason", l.blocker ? json(*l.blocker) : json(nullptr)}});
  }
  return out;
}

std::string etcd_manager_listings_text(const std::vector<EtcdManagerListing>& listed) {
  std::string out;
  for (const auto& l : listed) {
    out += l.name + (l.blocker ? "  CANNOT BE RESTORED by etcd-manager: " + *l.blocker : std::string()) + "\n";
  }
  return out;
}

json etcd_manager_commands_json(const std::vector<EtcdManagerCommand>& commands) {
  json out = json::array();
  for (const auto& cmd : commands) {
    json j = {{"key", cmd.key}, {"timestamp", time_json(cmd.timestamp_nanos / 1000)}};
    if (cmd.restore_backup) {
      j["restoreBackup"] = {{"backup", cmd.restore_backup->backup},
                            {"clusterSpec", spec_json(cmd.restore_backup->cluster_spec)}};
    }
    out.push_back(j);
  }
  return out;
}

std::string etcd_manager_commands_text(const std::vector<EtcdManagerCommand>& commands, const std::string& store_url) {
  std::string out;
  if (commands.empty()) out += "No commands queued in " + store_url + "\n";
  for (const auto& cmd : commands) {
    out += cmd.key + "  " + when(cmd.timestamp_nanos) + "  ";
    if (cmd.restore_backup) {
      out += "restore-backup " + cmd.restore_backup->backup + " into " + describe(cmd.restore_backup->cluster_spec);
    } else {
      out += "(a command this etcdadm does not know)";
    }
    out += "\n";
  }
  return out;
}

std::string deleted_commands_text(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& key : keys) out += "Deleted " + key + "\n";
  return out;
}

std::string queued_restore_text(const QueuedEtcdManagerRestore& queued, const std::string& store_url) {
  return "Queued a restore of backup " + queued.backup + (queued.verified ? " (verified intact)" : "") + " into " +
         describe(queued.into) + ": " + store_url + "/" + queued.command_key + "\n" +
         (queued.etcdadm_restores ? kAutoRestoreHint : kRestartHint) + "\n";
}

json etcd_manager_check_json(const std::vector<EtcdManagerFinding>& findings, size_t at_risk) {
  json out = json::array();
  for (const auto& x : findings) {
    out.push_back({{"backup", x.name}, {"reason", x.reason}, {"command", x.command_key}, {"hidden", x.hidden}});
  }
  return {{"findings", out}, {"atRisk", at_risk}};
}

std::string etcd_manager_check_text(const std::vector<EtcdManagerFinding>& findings, const std::string& store_url) {
  if (findings.empty()) return "etcd-manager can restore every backup it lists in " + store_url + "\n";
  std::string out;
  for (const auto& x : findings) {
    out += (x.command_key.empty() ? "backup " + x.name + ": " : "") + x.reason +
           (x.hidden ? " -> no longer listed to etcd-manager" : "") + "\n";
  }
  return out;
}

}  // namespace etcdadm::render

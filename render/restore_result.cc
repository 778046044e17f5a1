#include "render/restore_result.h"

#include <fmt/format.h>

#include <sstream>

#include "common/text.h"
#include "common/timefmt.h"
#include "render/change_log.h"

namespace etcdadm::render {

namespace {

// What the restore did to the revision (restore/restore_method.h): `revisionBump`.
nlohmann::json revision_bump_json(const RevisionBump& bump) {
  return {{"by", bump.by},
          {"markedCompacted", bump.mark_compacted},
          {"reason", bump.reason_name()},
          {"explanation", bump.explanation()}};
}

}  // namespace

nlohmann::json restore_result_json(const RestoreResult& r, const std::string& store_url) {
  nlohmann::json j = {{"backup", r.backup_name},
                      {"store", store_url},
                      {"dataDir", r.data_dir},
                      {"dbSize", r.db_size},
                      {"fetchSeconds", r.fetch_seconds},
                      {"restoreSeconds", r.restore_seconds},
                      {"revisionBump", revision_bump_json(r.revision_bump)}};
  if (!r.native) {
    j.update({{"restoreWith", r.tool.is_etcdutl ? "etcdutl" : "etcdctl"},
              {"tool", r.tool.path},
              {"toolVersion", r.tool.version}});
    return j;
  }
  j.update({{"restoreWith", "native"},
            {"etcdVersion", r.flavor},
            {"memberId", id_hex(r.member_id)},
            {"clusterId", id_hex(r.cluster_id)},
            {"snapshotRevision", r.snapshot_revision},
            {"revision", r.revision}});
  if (const auto& replay = r.replay) {
    j["replay"] = {
        {"fromRevision", replay->snapshot_revision},
        {"toRevision", replay->revision},
        {"revisions", replay->records},
        {"events", replay->events},
        {"segments", replay->segments},
        {"seconds", replay->seconds},
        {"late", replay->late ? late_window_json(replay->late->first_revision, replay->late->last_revision,
                                                 replay->late->committed_after_micros, replay->late->received_micros)
                              : nullptr}};
  }
  return j;
}

std::string restore_result_text(const RestoreResult& r, const std::string& member_name) {
  std::ostringstream o;
  std::string how = r.native ? "written natively for etcd " + r.flavor + ", member " + id_hex(r.member_id) +
                                   ", cluster " + id_hex(r.cluster_id) + ", revision " + std::to_string(r.revision)
                             : r.tool.path + " " + r.tool.version;
  o << "Restored backup " << r.backup_name << " into " << r.data_dir << " (" << human_bytes(r.db_size) << " db, " << how
    << ")\n";
  if (r.replay) {
    o << "Change log replayed from revision " << r.replay->snapshot_revision << " to " << r.replay->revision << " ("
      << r.replay->records << " revisions, " << r.replay->events << " events, " << r.replay->segments << " segments, "
      << fmt::format("{:.2f}", r.replay->seconds) << "s)\n";
    if (const auto& late = r.replay->late) {
      o << "The target is inside a window where commit times are known only approximately: revisions "
        << late->first_revision << ".." << late->last_revision << " were committed after "
        << format_rfc3339_micros(from_unix_micros(late->committed_after_micros)) << " and received by "
        << format_rfc3339_micros(from_unix_micros(late->received_micros))
        << " (the sidecar's capture was away), perhaps before the target.\nRestored revision " << r.replay->revision
        << ", the newest known to be committed by then; --to-revision " << late->last_revision << " includes them.\n";
    }
  }
  o << r.revision_bump.explanation() << ".\n";
  if (r.revision_bump.by > 0) {
    o << "Once etcd is up, start every kube-apiserver and restart the components that keep watches, so that they "
         "re-list at once.\n";
  }
  o << "Start etcd with --data-dir " << r.data_dir << " --name " << member_name
    << " and the same --initial-cluster / --initial-advertise-peer-urls; every other member must be\n"
    << "restored from the same backup (or join this one as a new member).\n";
  return o.str();
}

nlohmann::json static_pod_restore_json(const StaticPodRestoreResult& r, const std::string& store_url) {
  nlohmann::json j = restore_result_json(r.restored, store_url);
  j["manifest"] = r.manifest;
  j["setAside"] = r.set_aside.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.set_aside);
  j["resumed"] = r.resumed;
  j["serving"] = r.serving;
  j["hasLeader"] = r.has_leader;
  return j;
}

std::string static_pod_restore_text(const StaticPodRestoreResult& r) {
  std::ostringstream o;
  const RestoreResult& x = r.restored;
  o << (r.resumed ? "Carried on with the restore an earlier run began: " : "") << "Restored backup " << x.backup_name
    << " into " << x.data_dir << " (" << human_bytes(x.db_size) << " db"
    << (x.native ? ", member " + id_hex(x.member_id) + ", cluster " + id_hex(x.cluster_id) + ", revision " +
                       std::to_string(x.revision)
                 : ", " + x.tool.path + " " + x.tool.version)
    << ") while the kubelet had stopped etcd; " << r.manifest << " is back\n";
  if (!r.set_aside.empty()) o << "The member's old data is kept in " << r.set_aside << " (remove it once not needed)\n";
  o << x.revision_bump.explanation() << ".\n";
  if (!r.serving) {
    o << "The restored member does not answer yet: see the kubelet's log and `crictl logs` of the etcd container\n";
  } else if (!r.has_leader) {
    o << "The restored member answers without a leader: restore every other member of the cluster from the same "
         "backup with the same --initial-cluster and --initial-cluster-token\n";
  } else {
    o << "The restored member answers with a leader.\n";
  }
  if (x.revision_bump.by > 0) {
    o << "Restart every kube-apiserver and the components that keep watches, so that they re-list at once.\n";
  }
  return o.str();
}

nlohmann::json fetched_snapshot_json(const std::string& backup, const std::string& store_url,
                                     const std::string& output_file, const FetchResult& r) {
  return {{"backup", backup},
          {"store", store_url},
          {"output", output_file},
          {"dbSize", r.digest.db_bytes},
          {"dbSha256", r.digest.db_sha256}};
}

std::string fetched_snapshot_text(const std::string& backup, const std::string& output_file, const FetchResult& r) {
  return "Fetched backup " + backup + " to " + output_file + " (" + human_bytes(r.digest.total_bytes) + ", verified)\n";
}

}  // namespace etcdadm::render

#include "render/auto_control.h"

#include "common/text.h"

namespace etcdadm::render {

std::string auto_paused_text(const std::string& store_url) {
  return "Paused: no controller of " + store_url + " acts until `etcdadm auto resume`\n";
}

std::string restore_approved_text(const ApprovedRestore& approved) {
  const RestoreApproval& a = approved.approval;
  return "Approved " + a.command_key + ": the controllers restore backup " + a.backup + " into " +
         std::to_string(a.into.member_count) + " members of etcd " + a.into.etcd_version +
         " (every member replaced; `etcdadm etcd-manager delete-command " + a.command_key +
         "` cancels it until it starts)\n  exactly the db with SHA-256 " + a.backup_db_sha256 +
         (approved.verified
              ? " (verified now)"
              : " (as the backup's metadata records it: encrypted, and no --identity to verify it with)") +
         "\n  " +
         (approved.not_attested.empty() ? "attested: one of this cluster's controllers took it"
                                        : approved.not_attested + ": make sure it is the backup you mean") +
         "\n";
}

std::string restore_unapproved_text(const QueuedEtcdManagerRestore& queued, const std::string& certs_dir) {
  return "Not approved: there is no cluster CA key in " + certs_dir +
         ", and the controllers carry out only a restore approved with it. Run `etcdadm auto approve-restore " +
         queued.command_key + "` (with the store's flags) on a host holding the CA, or `etcdadm etcd-manager " +
         "delete-command " + queued.command_key + "` to cancel\n";
}

std::string auto_resumed_text(const std::string& store_url) {
  return "Resumed: the controllers of " + store_url + " act again\n";
}

std::string ca_rotation_started_text(const CaRotationRecord& r, const std::string& store_url) {
  return "CA rotation " + r.id + " started: new CA " + r.new_ca_sha256.substr(0, 12) + "... replaces " +
         r.old_ca_sha256.substr(0, 12) + "...; every host re-issues its certificates, then switches one at a time " +
         "(`etcdadm auto status --store " + store_url + "` shows each host's step)\n";
}

}  // namespace etcdadm::render

namespace etcdadm::render {

std::string adoption_text(const AdoptResult& r, const std::string& store_url, bool dry_run) {
  std::string out;
  if (r.already_adopted) {
    out = "Already adopted: cluster " + id_hex(r.plan.adopts_cluster_id) + " is run by the controllers of " +
          store_url + " (plan " + std::to_string(r.plan.sequence) + ", by " + r.plan.written_by + ")\n";
  } else {
    out = std::string(dry_run ? "Would adopt" : "Adopted") + " cluster " + id_hex(r.cluster.cluster_id) +
          " in place (no member restarted): its controllers on " + store_url + " run it from now\n";
  }
  for (const auto& m : r.plan.members) out += "  " + m.name + "  " + m.peer_url + "  " + m.client_url + "\n";
  out += "  etcd " + r.plan.etcd_version + "; spec: " + std::to_string(r.spec.member_count) + " members of etcd " +
         r.spec.etcd_version +
         (r.seeded ? std::string(dry_run ? " (would be written" : " (written") + " from the running cluster)"
                   : " (the store's, kept)") +
         "\n  " + r.effect +
         "\n  the way back: stop etcdadm auto on every host; each member goes on as the etcdadm CLI made it\n";
  return out;
}

nlohmann::json adoption_json(const AdoptResult& r, bool dry_run) {
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : r.plan.members)
    members.push_back({{"name", m.name}, {"peerURL", m.peer_url}, {"clientURL", m.client_url}});
  return {{"dryRun", dry_run},
          {"alreadyAdopted", r.already_adopted},
          {"clusterID", id_hex(r.cluster.cluster_id)},
          {"etcdVersion", r.plan.etcd_version},
          {"members", members},
          {"spec", {{"memberCount", r.spec.member_count}, {"etcdVersion", r.spec.etcd_version}}},
          {"specWritten", r.seeded.has_value()},
          {"effect", r.effect}};
}

}  // namespace etcdadm::render

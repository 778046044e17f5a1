#include "render/auto_control.h"

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

#include "render/auto_control.h"

namespace etcdadm::render {

std::string auto_paused_text(const std::string& store_url) {
  return "Paused: no controller of " + store_url + " acts until `etcdadm auto resume`\n";
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

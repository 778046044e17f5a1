// Certificates and the CA (controller/decide_ca.cc decides): this host's member certificates
// renewed, and its steps of a CA rotation (re-issue, switch with etcd restarted, leadership moved
// away first); the acting controller starts and completes rotations.
#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/failpoint.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "controller/controller.h"
#include "controller/controller_internal.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/member_health.h"
#include "etcdadm/pki.h"
#include "etcdadm/upgrade/upgrade.h"

namespace etcdadm {

using namespace controller_internal;

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
    return stems.empty() ? std::string("no member certificates on this host")
                         : join_list(stems) + " re-issued by the new CA";
  });
}

void Controller::ca_switch(const Decision& d, const Observation& o) {
  recorded_with(d, [&] {
    const CaRotationRecord& r = *o.ca_rotation;
    const RotationCa ca = open_ca_rotation(r, member_.certs_dir);
    switch_to_rotation_ca(r, ca, member_.certs_dir, member_.config_dir);
    trust_retired_ca_for_clients(r, member_);
    // A static pod's flags are its manifest's: written again from the env file, by the restart's
    // start when there is one (configure now would restart etcd before its leadership moved).
    const bool restart = o.local.data == DataState::kMember && init_system_->running(member_);
    if (init_system_->kind() == InitSystemKind::kKubelet && !restart) init_system_->configure(member_);
    failpoint("auto/ca-rotation/switched-files");
    std::string moved;
    if (restart) {
      // The leader's restart would cost the cluster an election: its leadership goes first.
      const auto& info = o.cluster.info;
      if (o.local.member_id != 0 && info.leader_id == o.local.member_id) {
        if (const MemberInfo* next = leadership_successor(info, o.local.member_id)) {
          hand_leadership(pool_.client(member_.loopback_client_url()), member_.loopback_client_url(), member_.name,
                          next->id, member_label(*next), member_log_hint(member_));
          moved = ", leadership moved to " + member_label(*next) + " first";
        }
      }
      pool_.reset();
      restart_member(member_, *init_system_, std::chrono::seconds(120));
    }
    finish_ca_switch(r, member_.config_dir);
    ca_sha256_ = ca_fingerprint(member_.ca_cert());
    pool_.reset();
    return "this host's CA is " + r.new_ca_sha256.substr(0, 12) + "... (the old kept as ca.retired-" + r.id +
           ".crt/key)" + (o.local.data == DataState::kMember ? "; etcd restarted on it" + moved : "");
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

void Controller::complete_ca_rotation(const Decision& d, const Observation& o) {
  recorded(d, [&] {
    if (!etcdadm::complete_ca_rotation(*store_, *o.ca_rotation, unix_now())) {
      spdlog::info("auto: the CA rotation record changed while it was marked completed: reading it again next round");
    }
  });
  store_view_.reset();
}

}  // namespace etcdadm

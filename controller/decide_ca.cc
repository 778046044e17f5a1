// Certificates and the CA (controller/decide.cc): this host's member certificates renewed before
// they expire, and a CA rotation carried through its steps (controller/ca_rotation.h): every host
// re-issues its leaves by the new CA, then each switches to it, one at a time.
#include "common/text.h"
#include "common/timefmt.h"
#include "controller/decide_concerns.h"

namespace etcdadm::decide_parts {

namespace {

// Whose part of rotation `r` is not done yet: "<member> (<what>)" for every member whose host has not
// reached `step` ("reissued" counts "switched" too); empty when every one has.
std::vector<std::string> rotation_behind(const Observation& o, const CaRotationRecord& r, const std::string& step) {
  std::vector<std::string> behind;
  for (const auto& [m, h] : member_hosts(o)) {
    const std::string label = m->name.empty() ? id_hex(m->id) : m->name;
    if (h == nullptr) {
      behind.push_back(label + " (no host record: not run by etcdadm auto)");
      continue;
    }
    const bool self = h->name == o.self;
    const std::string at =
        self ? ca_rotation_step(o.ca_rotation_state) : (h->ca_rotation_id == r.id ? h->ca_rotation_step : "");
    const bool done = at == step || (step == "reissued" && at == "switched");
    if (!done) behind.push_back(label + " (" + (at.empty() ? "not started" : at) + ")");
  }
  return behind;
}

}  // namespace

bool joinable_ca(const Observation& o, const std::string& ca_sha256) {
  if (ca_sha256 == o.ca_sha256) return true;
  // A host without a member switches as soon as every member's host re-issued its leaves, and a
  // member switches only where the others keep quorum: a spare that switched could otherwise never
  // join a cluster one member short, whose members wait for it to restart safely (found:
  // Systemd.TheShippedAutoAndSidecarUnits..., a corrupt member replaced during a rotation).
  const auto& r = o.ca_rotation;
  return r && r->completed_unix == 0 && ca_sha256 == r->new_ca_sha256 && o.ca_sha256 == r->old_ca_sha256 &&
         rotation_behind(o, *r, "reissued").empty();
}

std::optional<Decision> renew_own_certs(const Observation& o, const MemberInfo* me) {
  const int64_t window = o.auto_spec.cert_renew_before_seconds;
  if (window == 0 || me == nullptr || o.local.data != DataState::kMember || !o.local.has_leader ||
      o.local.certs_expire_unix == 0) {
    return std::nullopt;
  }
  if (o.local.certs_expire_unix - o.now_unix >= window) return std::nullopt;
  const std::string when = format_rfc3339_seconds(SystemTime(std::chrono::seconds(o.local.certs_expire_unix)));
  const std::string command = "etcdadm certs renew all (on " + o.self + "; etcd reads them on its next handshake)";
  for (const auto& m : o.cluster.info.members) {
    if (!member_healthy(m)) {
      return make(Step::kWait,
                  "this host's certificate " + o.local.first_expiring + " expires " + when +
                      ": renewed once every member is healthy (" + member_label(m) + " is not)",
                  command);
    }
  }
  return make(Step::kRenewCerts,
              "this host's certificate " + o.local.first_expiring + " expires " + when + ", within the spec's " +
                  std::to_string(window / 3600) +
                  " h: renewing its member's certificates with their keys, subjects and "
                  "SANs (no restart: etcd reads them on its next handshake)",
              command);
}

// This host's part of a CA rotation; nullopt when it has none now (or waits for other hosts, which
// does not hold back the rules after it: a member that is down must still be replaceable).
std::optional<Decision> rotate_own_ca(const Observation& o) {
  if (!o.ca_rotation || o.ca_rotation_state == CaRotationState::kOtherCa ||
      o.ca_rotation_state == CaRotationState::kSwitched) {
    return std::nullopt;
  }
  const CaRotationRecord& r = *o.ca_rotation;
  if (!o.ca_rotation_problem.empty()) {
    return make(
        Step::kWait,
        "CA rotation " + r.id + " (" + r.started_by + ") cannot be carried out here: " + o.ca_rotation_problem,
        "etcdadm auto status --store " + o.store_url + " (delete " + kAutoCaRotationKey + " if nobody started it)");
  }
  const std::string command = "etcdadm auto rotate-ca --store " + o.store_url + " (started it; the hosts carry it out)";
  if (o.ca_rotation_state == CaRotationState::kDue) {
    return make(Step::kCaReissue,
                "CA rotation " + r.id +
                    ": re-issuing this host's certificates by the new CA, each served "
                    "with its cross certificate (peers and clients that trust only the current CA still verify them; "
                    "no restart)",
                command);
  }
  if (o.ca_rotation_state == CaRotationState::kSwitchRestart) {
    return make(Step::kCaSwitch,
                "CA rotation " + r.id +
                    ": this host's switch to the new CA stopped before its etcd restarted on it: finishing it",
                command);
  }
  // kReissued: the switch, once every member's host re-issued and every member is healthy.
  if (!rotation_behind(o, r, "reissued").empty()) return std::nullopt;
  if (o.local.data == DataState::kMember) {
    for (const auto& m : o.cluster.info.members) {
      if (!member_healthy(m)) return std::nullopt;
    }
    // The switch restarts this host's etcd: only where the others keep quorum meanwhile, and never
    // beside a version change (which restarts members too).
    if (o.spec && voters_behind(o.cluster.info, o.spec->etcd_version)) {
      return make(Step::kWait, "CA rotation " + r.id +
                                   ": this host's switch restarts its etcd, so it waits for the version change under "
                                   "way to finish");
    }
    const MemberInfo* me = find_member_by_peer_url(o.cluster.info, o.self_peer_url);
    if (me != nullptr && !me->learner) {
      const QuorumCheck q = check_stop(o.cluster.info, me->id);
      // A member short of the spec: the acting controller adds a spare first (joinable_ca), after
      // which the switch keeps quorum.
      if (!q.safe && !o.auto_spec.restart_without_quorum && o.spec && q.voters < o.spec->member_count) {
        return std::nullopt;
      }
      if (!q.safe && !o.auto_spec.restart_without_quorum) {
        return make(Step::kWait,
                    "CA rotation " + r.id +
                        ": this host's switch restarts its etcd, and the cluster cannot keep quorum meanwhile (" +
                        q.explanation + "): writes stop for the seconds of the restart, so a person allows it",
                    "etcdadm seed --store " + o.store_url +
                        " --restart-without-quorum on (the switches then go one host at a time)");
      }
    }
  }
  return make(
      Step::kCaSwitch,
      "CA rotation " + r.id +
          ": every member's certificates are the new CA's: this host takes the new CA as its own and " +
          (o.local.data == DataState::kMember ? "restarts its etcd on it (etcd reads its trusted CAs only at start)"
                                              : "has no etcd to restart"),
      command);
}

// The acting controller's part of a CA rotation: marking it completed, or starting one the spec's
// window asks for; nullopt when neither is due.
std::optional<Decision> rotate_cluster_ca(const Observation& o) {
  if (o.ca_rotation && o.ca_rotation->completed_unix == 0) {
    const auto& r = *o.ca_rotation;
    if (!rotation_behind(o, r, "switched").empty()) return std::nullopt;
    Decision d = make(Step::kCompleteCaRotation,
                      "CA rotation " + r.id + ": every member's host runs on the new CA: marking it completed",
                      "etcdadm auto status --store " + o.store_url);
    return d;
  }
  const int64_t window = o.auto_spec.ca_rotate_before_seconds;
  if (window == 0 || o.local.ca_expires_unix == 0 || o.local.ca_expires_unix - o.now_unix >= window)
    return std::nullopt;
  for (const auto& [m, h] : member_hosts(o)) {
    if (h == nullptr || h->ca_sha256 != o.ca_sha256 || !member_healthy(*m)) return std::nullopt;
  }
  const std::string when = format_rfc3339_seconds(SystemTime(std::chrono::seconds(o.local.ca_expires_unix)));
  return make(Step::kStartCaRotation,
              "the cluster CA expires " + when + ", within the spec's " + std::to_string(window / 3600) +
                  " h: starting its rotation (a new CA, cross-signed by the current one; every host re-issues, then "
                  "switches one at a time)",
              "etcdadm auto rotate-ca --store " + o.store_url);
}

}  // namespace etcdadm::decide_parts

// Corruption (controller/decide.cc): the acting controller compares the voters' HashKV; a voter
// that differs from a majority that agrees, or that etcd refused to start on inconsistent data, is
// removed (never at the cost of quorum) and its host sets its data aside and joins again; etcd's
// CORRUPT alarm is disarmed only once that member was replaced and every voter agrees.
#include <algorithm>

#include "common/text.h"
#include "controller/decide_concerns.h"
#include "etcdadm/maintenance/alarms.h"
#include "etcdadm/quorum.h"

namespace etcdadm::decide_parts {

std::optional<Decision> forget_corrupt_member(const Observation& o) {
  auto c = o.maintenance.corrupt.find(o.local.member_id);
  if (c == o.maintenance.corrupt.end()) return std::nullopt;
  const std::string how =
      c->second.refused_to_start
          ? "etcd refused to start it on data that differs from its peers', which agreed on HashKV " +
                std::to_string(c->second.majority_hash) + " at revision " + std::to_string(c->second.revision)
          : "its HashKV at revision " + std::to_string(c->second.revision) + " was " + std::to_string(c->second.hash) +
                ", the majority's " + std::to_string(c->second.majority_hash);
  Decision d =
      make(Step::kForgetMember,
           "this host's member " + id_hex(o.local.member_id) + " was found corrupt by " + c->second.host + " (" + how +
               ") and removed: stopping it and setting its data aside for a person, so that the host can join again",
           "mv <data-dir> <data-dir>.corrupt; etcdadm reset --skip-remove-member");
  d.set_aside = SetAside::kCorrupt;
  return d;
}

// A voter etcd refused to start because its initial corruption check found the member's data
// differs from a peer's. etcd does not say which side is damaged (a member refuses beside one
// damaged peer too), so the other voters' HashKV decide: when they all agree and are a majority of
// the voters, the refusing member is the one that differs, and it is replaced like a corrupt one;
// otherwise nothing is. `unhealthy`: the unhealthy voters, all refusing (else nullopt: the replace
// rule's grace applies).
std::optional<Decision> act_on_refused_members(const Observation& o, const std::vector<const MemberInfo*>& unhealthy) {
  if (unhealthy.empty()) return std::nullopt;
  for (const auto* m : unhealthy) {
    if (host_refusing_member(o, m->id) == nullptr) return std::nullopt;
  }
  const ClusterInfo& info = o.cluster.info;
  const MemberInfo& m = *unhealthy.front();
  const HostView& host = *host_refusing_member(o, m.id);
  const std::string what = "etcd refused to start member " + member_label(m) + " on " + host.record.name +
                           " (its initial corruption check found the member's data differs from a peer's)";
  const std::string by_hand = "etcdadm hashkv (on a healthy member's host); etcd's log on " + host.record.name;
  if (!o.hashes) return make(Step::kWait, what + ": comparing the other voters' HashKV first", by_hand);
  const HashVerdict& v = o.hashes->verdict;
  if (v.kind == HashVerdict::Kind::kIncomplete) return make(Step::kWait, what + "; " + v.explanation, by_hand);
  if (v.kind != HashVerdict::Kind::kAgree) {
    return make(Step::kWait,
                what + ", but the other voters do not agree either (" + v.explanation +
                    "): which data is right cannot be told, and nothing is replaced",
                "etcdadm hashkv; restore the cluster from a verified backup (etcdadm etcd-manager restore-backup NAME "
                "--store " +
                    o.store_url + ")");
  }
  int voters = 0;
  for (const auto& mi : info.members) voters += mi.learner ? 0 : 1;
  const int agreeing = static_cast<int>(o.hashes->survey.members.size());
  if (agreeing < quorum_of(voters)) {
    return make(Step::kWait,
                what + "; the " + std::to_string(agreeing) + " voters that agree are no majority of " +
                    std::to_string(voters) + ": nothing is replaced",
                by_hand);
  }
  QuorumCheck q = check_remove(info, m.id);
  if (!q.safe) return make(Step::kWait, what + ", but removing it would cost quorum: " + q.explanation, by_hand);
  CorruptMember record;
  record.unix = o.now_unix;
  record.host = o.self;
  record.revision = o.hashes->survey.revision;
  record.majority_hash = v.majority_hash;
  record.refused_to_start = true;
  Decision d =
      make(Step::kRemoveMember,
           "member " + member_label(m) + " is corrupt: " + what + ", and " + v.explanation +
               ". Removing it to be replaced from the healthy members (" + q.explanation +
               "); its host keeps its data aside",
           "etcdadm member remove " + (m.name.empty() ? id_hex(m.id) : m.name) + " --endpoints " + o.self_client_url +
               "; on its host: move the data dir aside, then etcdadm join " + o.self_client_url + " --name " + m.name);
  d.member_id = m.id;
  d.corrupt = record;
  return d;
}

std::optional<Decision> act_on_corruption(const Observation& o) {
  const ClusterInfo& info = o.cluster.info;
  const auto alarms = alarms_in_status(info);
  std::vector<uint64_t> corrupt_alarms;
  for (const auto& a : alarms) {
    if (a.alarm == "CORRUPT") corrupt_alarms.push_back(a.member_id);
  }
  const std::string by_hand = "etcdadm hashkv; etcdadm alarm list (docs/operations.md, \"Runbook: a corrupt member\")";
  if (!o.hashes) {
    if (corrupt_alarms.empty()) return std::nullopt;
    return make(Step::kWait,
                "etcd raised " + alarms_text(alarms) + ": comparing the voters' HashKV before anything else", by_hand);
  }
  const HashVerdict& v = o.hashes->verdict;
  switch (v.kind) {
    case HashVerdict::Kind::kMinorityDiffers: {
      const MemberInfo* m = nullptr;
      for (const auto& mi : info.members) {
        if (mi.id == v.differing.front()) m = &mi;
      }
      if (m == nullptr) return make(Step::kWait, v.explanation + ": the member is no longer listed", by_hand);
      QuorumCheck q = check_remove(info, m->id);
      if (!q.safe) {
        return make(Step::kWait,
                    "member " + member_label(*m) + " is corrupt (" + v.explanation +
                        "), but removing it would cost quorum: " + q.explanation,
                    by_hand);
      }
      CorruptMember record;
      record.unix = o.now_unix;
      record.host = o.self;
      record.revision = o.hashes->survey.revision;
      record.majority_hash = v.majority_hash;
      for (const auto& h : o.hashes->survey.members) {
        if (h.member_id == m->id) record.hash = h.hash;
      }
      Decision d = make(Step::kRemoveMember,
                        "member " + member_label(*m) + " is corrupt: " + v.explanation +
                            ". Removing it to be replaced from the healthy members (" + q.explanation +
                            "); its host keeps its data aside",
                        "etcdadm member remove " + (m->name.empty() ? id_hex(m->id) : m->name) + " --endpoints " +
                            o.self_client_url + "; on its host: move the data dir aside, then etcdadm join " +
                            o.self_client_url + " --name " + m->name);
      d.member_id = m->id;
      d.corrupt = record;
      return d;
    }
    case HashVerdict::Kind::kNoMajority:
      return make(Step::kWait, v.explanation + ": nothing is replaced; a person decides which data is right",
                  "etcdadm hashkv; restore the cluster from a verified backup (etcdadm etcd-manager restore-backup "
                  "NAME --store " +
                      o.store_url + ")");
    case HashVerdict::Kind::kAgree: {
      if (corrupt_alarms.empty()) return std::nullopt;
      // A member this cluster's controllers found corrupt lately is gone from it, and no alarm was
      // disarmed for it yet.
      bool replaced = false;
      for (const auto& [id, c] : o.maintenance.corrupt) {
        const auto seen = o.corrupt_seen_seconds.find(id);
        const int64_t age = window_age(o.now_unix - c.unix, seen == o.corrupt_seen_seconds.end() ? -1 : seen->second);
        replaced = replaced || (!c.alarm_settled && age >= 0 && age <= kCorruptDisarmWindowSeconds &&
                                std::none_of(info.members.begin(), info.members.end(),
                                             [&, id = id](const MemberInfo& mi) { return mi.id == id; }));
      }
      if (!replaced) {
        return make(
            Step::kWait,
            "etcd raised " + alarms_text(alarms) + ", but " + v.explanation +
                ": no member was found corrupt and replaced in the last hour, so the alarm stays for a person to "
                "look at",
            by_hand + "; etcdctl alarm disarm once the cause is known");
      }
      Decision d = make(Step::kDisarmCorrupt,
                        "etcd raised " + alarms_text(alarms) + "; the corrupt member was replaced and " +
                            v.explanation + ": disarming the alarm so that the cluster takes writes again",
                        "etcdctl alarm disarm");
      d.members = corrupt_alarms;
      return d;
    }
    case HashVerdict::Kind::kIncomplete:
      break;
  }
  if (corrupt_alarms.empty()) return std::nullopt;
  return make(Step::kWait, "etcd raised " + alarms_text(alarms) + "; " + v.explanation, by_hand);
}

}  // namespace etcdadm::decide_parts

#include "etcdadm/maintenance/space.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"
#include "common/text.h"
#include "etcd/client.h"
#include "etcd/grpc_errors.h"
#include "etcdadm/quorum.h"

namespace etcdadm {

namespace {

bool has_nospace(const std::vector<MemberAlarm>& alarms) {
  return std::any_of(alarms.begin(), alarms.end(), [](const MemberAlarm& a) { return a.alarm == "NOSPACE"; });
}

int64_t quota_of(const MemberInfo& m, int64_t configured) {
  if (m.db_size_quota > 0) return m.db_size_quota;
  return configured > 0 ? configured : kEtcdDefaultQuotaBytes;
}

int64_t largest_db(const ClusterInfo& info) {
  int64_t out = 0;
  for (const auto& m : info.members) out = std::max(out, m.db_size);
  return out;
}

}  // namespace

int64_t space_compaction_revision(int64_t revision, int64_t keep_revisions, int64_t keep_from_revision,
                                  std::string* note) {
  int64_t target = revision - keep_revisions;
  std::string why = fmt::format("revision {} minus a margin of {} revisions", revision, keep_revisions);
  if (keep_from_revision > 0 && keep_from_revision < target) {
    target = keep_from_revision;
    why = fmt::format("revision {}, where the change log's capture is (the margin would be {})", keep_from_revision,
                      revision - keep_revisions);
  }
  if (target < 2) {
    if (note) *note = fmt::format("no compaction: the cluster is at revision {}, within the margin", revision);
    return 0;
  }
  if (note) *note = why;
  return target;
}

SpaceRecoveryResult recover_space(const SpaceRecoveryOptions& o) {
  SpaceRecoveryResult r;
  ClusterInfo info = cluster_info(o.connection, o.local_member_id);
  const ConnectionConfig conn = with_member_endpoints(o.connection, info);
  EtcdClient cluster(conn);
  r.alarms = list_alarms(cluster);
  r.largest_db_before = largest_db(info);
  if (!has_nospace(r.alarms)) return r;

  // The defrag's checks, before anything changes: every member answers with a leader, no CORRUPT.
  const DefragPlan checked = plan_defrag(info, r.alarms, DefragRule{});
  if (!checked.problems.empty()) {
    throw Error(ErrorKind::kUnavailable, "not recovering from NOSPACE: " + join_list(checked.problems),
                "every member must answer first; nothing was changed");
  }
  if (o.backup) r.backup = o.backup(cluster);

  // The revision: any member's Status header (they agree once applied; the alarm stops writes).
  for (const auto& m : info.members) {
    if (m.client_urls.empty()) continue;
    r.revision = std::max(r.revision, cluster.status(m.client_urls.front()).header().revision());
  }
  r.compacted_to = space_compaction_revision(r.revision, o.keep_revisions, o.keep_from_revision, &r.compaction_note);
  if (r.compacted_to > 0) {
    try {
      cluster.compact(r.compacted_to, /*physical=*/true);
      spdlog::info("compacted to revision {} ({})", r.compacted_to, r.compaction_note);
    } catch (const Error& e) {
      if (!e.mentions("compacted")) throw;
      r.compaction_note += "; etcd had compacted past it already";
      spdlog::info("revision {} is compacted already", r.compacted_to);
    }
  }

  DefragOptions d;
  d.connection = conn;
  d.local_member_id = o.local_member_id;
  d.defrag_timeout = o.defrag_timeout;
  d.health_timeout = o.health_timeout;
  d.on_member = o.on_member;
  r.defrag = run_defrag(d);

  info = cluster_info(conn, o.local_member_id);
  r.largest_db_after = largest_db(info);
  r.quota = 0;
  const MemberInfo* worst = nullptr;
  for (const auto& m : info.members) {
    const int64_t q = quota_of(m, o.quota_bytes);
    r.quota = r.quota == 0 ? q : std::min(r.quota, q);
    if (static_cast<double>(m.db_size) > o.headroom * static_cast<double>(q) &&
        (worst == nullptr || m.db_size > worst->db_size)) {
      worst = &m;
    }
  }
  if (worst != nullptr) {
    r.not_under_quota = fmt::format(
        "after {} and defragmenting every member, member {} still holds {} ({} in use) of its quota of {}: more than "
        "{:.0f}% of it, so writes would fill it again at once. The NOSPACE alarm stays armed. "
        "Raise etcd's --quota-backend-bytes on every member (etcdadm: ETCD_QUOTA_BACKEND_BYTES in each member's "
        "etcd.env, or init/join --quota-backend-bytes; restart the members one at a time; etcd suggests at most 8 "
        "GiB), or delete data, then run etcdadm alarm recover again",
        r.compacted_to > 0 ? "compacting to " + r.compaction_note : r.compaction_note, member_label(*worst),
        human_bytes(worst->db_size), human_bytes(worst->db_size_in_use), human_bytes(quota_of(*worst, o.quota_bytes)),
        100 * o.headroom);
    spdlog::warn("{}", r.not_under_quota);
    return r;
  }
  for (const auto& a : r.alarms) {
    if (a.alarm != "NOSPACE") continue;
    cluster.alarm_disarm(a.member_id, etcdserverpb::AlarmMember::NOSPACE);
  }
  const auto left = list_alarms(cluster);
  if (has_nospace(left)) {
    throw Error(ErrorKind::kUnavailable, "etcd raised NOSPACE again right after it was disarmed: " + alarms_text(left),
                "a writer filled the space again: raise --quota-backend-bytes");
  }
  r.disarmed = true;
  spdlog::info("NOSPACE disarmed: the largest db file is {} of a quota of {}", human_bytes(r.largest_db_after),
               human_bytes(r.quota));
  return r;
}

}  // namespace etcdadm

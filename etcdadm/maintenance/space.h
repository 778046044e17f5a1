// Recovering from etcd's NOSPACE alarm without losing data: `etcdadm alarm recover` and the
// controller's (docs/operations.md "Runbook: the NOSPACE alarm").
//
// A member whose db file would grow past --quota-backend-bytes raises NOSPACE for the whole
// cluster: from then on etcd takes reads, deletes and compactions, no writes (the Kubernetes API
// server stops). The file shrinks only when old revisions are compacted away and every member is
// defragmented; then the alarm is disarmed. In order:
//
//   1. the alarms listed: nothing to do without NOSPACE; a CORRUPT alarm stops everything
//   2. a backup (the caller's, before anything changes)
//   3. compaction to the current revision minus a margin (`keep_revisions`, and never past
//      `keep_from_revision`: the change log's capture position), physical, so the pages are free
//   4. every member defragmented, one at a time, the leader last (defrag.h)
//   5. only when every member's file is then under `headroom` of its quota: every NOSPACE alarm
//      disarmed. Otherwise the alarm stays: what the members hold is too much for the quota, and
//      the result says which quota to raise (a disarm would let writes fill the file again within
//      moments, and the alarm come back: a loop, not a recovery).
//
// Why the margin: a watcher (the API server's watch cache, an informer re-watching from the
// resourceVersion of its last list, the change log's capture) resumes from a revision it has seen;
// compacted past it, it gets "required revision has been compacted" and must relist (the change log
// gets a gap that no point-in-time restore can cross). Under NOSPACE the revision stands still, so
// every connected watcher is at the head or within the writes of the moments before the alarm; 1000
// revisions keeps a watcher that was that far behind whole, and costs little space: the history
// worth reclaiming is what is older.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "etcd/connection.h"
#include "etcdadm/maintenance/defrag.h"

namespace etcdadm {

inline constexpr int64_t kEtcdDefaultQuotaBytes = int64_t{2} << 30;

struct SpaceRecoveryOptions {
  ConnectionConfig connection;  // any members' client URLs
  uint64_t local_member_id = 0;
  // The members' --quota-backend-bytes (0: etcd's default, 2 GiB). A member's own Status says it
  // from 3.6 on, which wins.
  int64_t quota_bytes = 0;
  int64_t keep_revisions = 1000;
  // The change log's capture position (0: none, or not capturing): compaction never goes past it.
  int64_t keep_from_revision = 0;
  // The share of its quota every member's file must be under before the alarm is disarmed.
  double headroom = 0.9;
  PreChangeBackup backup;  // taken first; empty: none (said explicitly)
  std::chrono::seconds defrag_timeout{600};
  std::chrono::seconds health_timeout{120};
  std::function<void(const DefragMemberResult&)> on_member;
};

struct SpaceRecoveryResult {
  std::vector<MemberAlarm> alarms;  // as found
  std::string backup;
  int64_t revision = 0;         // the cluster's revision when it started
  int64_t compacted_to = 0;     // 0: no compaction (nothing older than the margin)
  std::string compaction_note;  // how the revision was chosen
  DefragResult defrag;
  int64_t largest_db_before = 0, largest_db_after = 0;
  int64_t quota = 0;  // the smallest quota of a member, as used
  bool disarmed = false;
  // Why the alarm was left armed ("" when it was disarmed or there was none), with what to raise.
  std::string not_under_quota;
};

// The steps above. Throws (kUnavailable) when a member does not answer or has no leader, or etcd
// raised CORRUPT, before anything changes.
SpaceRecoveryResult recover_space(const SpaceRecoveryOptions& options);

// The compaction revision step 3 picks for a cluster at `revision` (0: none; pure, unit-tested).
int64_t space_compaction_revision(int64_t revision, int64_t keep_revisions, int64_t keep_from_revision,
                                  std::string* note);

}  // namespace etcdadm

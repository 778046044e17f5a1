// etcdadm recover: the day most of the cluster is gone for good and this host's member survived
// with its data. The member becomes a cluster of one through etcd's own way (`--force-new-cluster`
// for one start: etcd replays its WAL, keeps every write the member had committed, and removes the
// lost members by configuration changes it commits itself); its member ID, cluster ID and revisions
// continue, so a Kubernetes API server's watch caches stay valid. The data dir as it was is kept
// aside, never deleted. The member is stopped gracefully, copied aside and started once forced in
// place when the members that join it later are sure to be sent its db rather than its raft log
// (whose last entries a forced start may drop while its db keeps them: a killed etcd's WAL may hold
// as uncommitted entries its db applied): when its data holds a raft snapshot (its log then begins
// after it), or when it answered and its db applied nothing past the commit index it answered
// with. Otherwise (a young member, killed or restarted since it last heard the commit index) a copy
// of its data is started alone, forced, with a raft snapshot at once, as a private member on unix
// sockets no client reaches (restore/private_etcd.h); that copy, stopped cleanly, moves into place
// and the original is renamed aside. The lost hosts then join it again.
//
// With a store (`--store`), the change log may hold more than the member: the sidecar of a member
// now lost kept capturing after this one fell behind (stopped, partitioned away). When the log,
// replayed from the copy's db, reaches past what the member held, the new cluster starts from
// that: the db plus the log's records after it, restored natively as a new one-member cluster (new
// member and cluster IDs; a Kubernetes keyspace's revision bumped, as any restore's, since the log
// may end short of what the lost members served). Otherwise the member's own data wins. The
// result says which source won and both revisions.
//
// Refused, with nothing changed, while a quorum of the voters answers with a leader (nothing is
// lost: replace the lost members instead), and while another member that answers has a higher
// revision than this one (recover there: it holds more), unless forced; the result names what a
// force overrode.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "changelog/segment.h"
#include "etcdadm/member_config.h"
#include "restore/restore_method.h"
#include "store/backup_store.h"

namespace etcdadm {

struct RecoverOptions {
  MemberConfig member;  // from the state file
  // Recover here even though another member that answers has a higher revision (it is about to be
  // lost too, or its data is known bad). Never overrides a quorum that answers.
  bool force = false;
  std::chrono::seconds timeout{120};
  // The store whose change log may reach further than the member (nullopt: the member's data only).
  std::optional<BackupStore> store;
  // The log's segments that count (unset: all of them; the controllers: those their cluster tagged).
  std::function<bool(const changelog::SegmentName&)> segment_accepted;
  RestoreMethod method;       // the revision bump when the log wins (default: the Kubernetes rule)
  std::string cluster_token;  // the new cluster's token when the log wins ("": a fresh one)
};

struct RecoverResult {
  enum class Source {
    kMember,     // the member's own data, kept as it is (--force-new-cluster): IDs and revisions continue
    kChangeLog,  // the member's db plus the change log's records after it, restored as a new cluster
  };
  Source source = Source::kMember;
  uint64_t member_id = 0;
  uint64_t cluster_id = 0;           // the new cluster's (the old one's when the member's data won)
  uint64_t previous_cluster_id = 0;  // the cluster the member belonged to
  int64_t revision_before = 0;       // what the member served before (its Status)
  int64_t revision = 0;              // what the one-member cluster serves
  // The change log: the last revision it reaches from the member's db without a gap (0: no store
  // given, or no log of the cluster in it), and why it was not taken when it goes further.
  int64_t log_reaches = 0;
  std::string log_not_taken;
  int64_t log_records = 0;     // replayed onto the member's db when the log won
  RevisionBump revision_bump;  // when the log won
  std::string set_aside;       // the copy of the data dir taken first
  struct Lost {
    std::string name;
    uint64_t id = 0;
    std::vector<std::string> peer_urls;
  };
  std::vector<Lost> removed;            // the members the new cluster no longer has
  std::vector<std::string> overridden;  // what --force overrode (empty without it)
  std::string client_url;               // where the others join
};

RecoverResult run_recover(const RecoverOptions& options);

}  // namespace etcdadm

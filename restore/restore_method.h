// How a restore writes its data dir (natively or with etcd's tool) and where the restored member's
// revision starts: at the snapshot's own, or moved past it for Kubernetes. A restore takes etcd back
// in time, and a Kubernetes keyspace's clients (kube-apiserver's watch cache, every informer) hold
// revisions from after the backup: they must see a newer revision than any they saw, and their old
// ones must read as compacted so that they re-list (docs/operations.md, "Restoring the etcd of a
// Kubernetes control plane"). So a keyspace that holds Kubernetes' keys is bumped by default; any
// other is restored as it was.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace etcdadm {

// Where kube-apiserver keeps its objects (its --etcd-prefix default).
inline constexpr const char* kKubernetesKeyPrefix = "/registry/";
// The bump a Kubernetes keyspace gets when nobody said otherwise: etcd's and Kubernetes' documented
// value. It must exceed every revision written between the restored point and the failure (a busy
// control plane writes a few hundred per second: 10^9 is weeks of that), costs nothing (no data is
// written for the gap), leaves int64's limit 9 * 10^9 restores away, and is the same on every host
// that restores the same backup without their having to agree on anything.
inline constexpr uint64_t kKubernetesRevisionBump = 1000000000;

// What `backup restore`, `init --snapshot/--from-backup` and the controllers' restores were told.
struct RestoreMethod {
  std::string restore_with;  // "" or "native": etcdadm writes it; "etcdutl" / "etcdctl": that tool
  // --bump-revision N --mark-compacted (both or neither, as etcdutl's): applied to any keyspace.
  uint64_t bump_revision = 0;
  bool mark_compacted = false;
  // With neither given: a keyspace that holds a key under kKubernetesKeyPrefix (in any revision) is
  // bumped by this much and marked compacted. 0: the rule is off and the db is not read for it
  // (drills: their member is private, and they compare its HashKV with the backup's).
  uint64_t kubernetes_bump = kKubernetesRevisionBump;
  // --keep-revision: a Kubernetes keyspace is restored at its own revision, with a warning.
  bool keep_revision = false;
  bool native() const { return restore_with.empty() || restore_with == "native"; }
  // Whether a flag of the data dir was given (they mean nothing without a data dir to write).
  bool any_given() const { return !restore_with.empty() || bump_revision > 0 || mark_compacted || keep_revision; }
};

// What a restore did to the revision, and why.
struct RevisionBump {
  enum class Reason {
    kNone,        // no Kubernetes keys (or a tool restore that cannot tell): restored as it was
    kAsked,       // --bump-revision N --mark-compacted
    kKubernetes,  // the keyspace holds Kubernetes' keys, nothing was said: bumped by default
    kKept,        // the keyspace holds Kubernetes' keys, and --keep-revision kept its revision
  };
  uint64_t by = 0;
  bool mark_compacted = false;
  Reason reason = Reason::kNone;
  // "none" | "asked" | "kubernetes-keys" | "kept": the JSON's revisionBump.reason (docs/json.md).
  std::string reason_name() const;
  // One sentence for people: what was done to the revision and why.
  std::string explanation() const;
};

// Refuses (kInvalidArgument) --bump-revision without --mark-compacted or the other way round (as
// etcdutl does), and --keep-revision beside either.
void check_revision_flags(const RestoreMethod& method);

// The rule. `holds_kubernetes_keys` is only consulted (and need only be computed) when
// needs_kubernetes_check(method).
RevisionBump decide_revision_bump(const RestoreMethod& method, bool holds_kubernetes_keys);
bool needs_kubernetes_check(const RestoreMethod& method);

// The bump of a restore to the end of the change log after a total loss (the controllers'
// auto-restore), sized from how fast the cluster wrote: the restored revision is the log's last;
// clients may have seen revisions the cluster wrote after the log was last known complete and
// before it died, at most `revisions_per_second` for `unaccounted_seconds` (until the plan is
// written: an upper bound on when it died). Ten times that, and at least kMinimumSizedBump (a
// quiet cluster, a rate the log could not measure): a burst may write faster than the log's
// average, and an overestimate costs nothing.
inline constexpr uint64_t kMinimumSizedBump = 10000;
uint64_t sized_revision_bump(double revisions_per_second, int64_t unaccounted_seconds);

// How fast a change log shows its cluster writing, in revisions per second: the faster of its
// whole span (from `from_revision`, the snapshot's, taken at `from_micros`) and its last minute
// (the newest segments back to one received a minute before the newest). 0 when it cannot tell
// (no segment, no time known).
struct LogRateSample {
  int64_t revision = 0;
  int64_t observed_ms = 0;
};
double log_write_rate(int64_t from_revision, int64_t from_micros, const std::vector<LogRateSample>& segment_ends);

// Whether the database at `db_path` (its first `db_bytes` bytes; 0 = the whole file) holds a key
// under kKubernetesKeyPrefix in any revision. Throws kCorrupt for a file that is not an etcd db.
bool holds_kubernetes_keys(const std::string& db_path, uint64_t db_bytes);

}  // namespace etcdadm

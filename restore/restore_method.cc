#include "restore/restore_method.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "common/error.h"
#include "etcd/datadir/bolt_reader.h"
#include "etcd/datadir/snapshot_inspect.h"
#include "restore/native_restore.h"

namespace etcdadm {

std::string RevisionBump::reason_name() const {
  switch (reason) {
    case Reason::kAsked:
      return "asked";
    case Reason::kKubernetes:
      return "kubernetes-keys";
    case Reason::kKept:
      return "kept";
    case Reason::kNone:
      break;
  }
  return "none";
}

std::string RevisionBump::explanation() const {
  const std::string by_text = std::to_string(by) + (mark_compacted ? ", every older revision marked compacted" : "");
  switch (reason) {
    case Reason::kAsked:
      return "The revision moved forward by " + by_text + " (--bump-revision)";
    case Reason::kKubernetes:
      return "The revision moved forward by " + by_text + ": the keyspace holds Kubernetes' keys (" +
             kKubernetesKeyPrefix +
             "), whose watch caches and informers must see a newer revision than any they saw and re-list "
             "(--keep-revision restores it as it was)";
    case Reason::kKept:
      return std::string(
                 "The revision is the snapshot's own (--keep-revision), although the keyspace holds Kubernetes' keys "
                 "(") +
             kKubernetesKeyPrefix +
             "): restart every kube-apiserver and every component with informers before they write, or they "
             "may miss changes";
    case Reason::kNone:
      break;
  }
  return std::string("The revision is the snapshot's own: the keyspace holds no Kubernetes keys (") +
         kKubernetesKeyPrefix + ")";
}

void check_revision_flags(const RestoreMethod& method) {
  check_revision_bump(method.bump_revision, method.mark_compacted);
  if (method.keep_revision && (method.bump_revision > 0 || method.mark_compacted)) {
    throw Error(ErrorKind::kInvalidArgument, "--keep-revision and --bump-revision/--mark-compacted exclude each other",
                "give --bump-revision N --mark-compacted to choose the bump, or --keep-revision to have none");
  }
}

bool needs_kubernetes_check(const RestoreMethod& method) {
  return method.bump_revision == 0 && !method.mark_compacted && method.kubernetes_bump > 0;
}

RevisionBump decide_revision_bump(const RestoreMethod& method, bool holds_kubernetes_keys) {
  RevisionBump b;
  if (method.bump_revision > 0 || method.mark_compacted) {
    b.by = method.bump_revision;
    b.mark_compacted = method.mark_compacted;
    b.reason = RevisionBump::Reason::kAsked;
    return b;
  }
  if (!needs_kubernetes_check(method) || !holds_kubernetes_keys) return b;
  if (method.keep_revision) {
    b.reason = RevisionBump::Reason::kKept;
    return b;
  }
  b.by = method.kubernetes_bump;
  b.mark_compacted = true;
  b.reason = RevisionBump::Reason::kKubernetes;
  return b;
}

uint64_t sized_revision_bump(double revisions_per_second, int64_t unaccounted_seconds) {
  const double seconds = static_cast<double>(std::max<int64_t>(1, unaccounted_seconds));
  const double sized = std::ceil(10.0 * std::max(0.0, revisions_per_second) * seconds);
  // Never more than etcd's revisions leave room for (the bump is checked against INT64_MAX / 2).
  constexpr uint64_t kCap = INT64_MAX / 4;
  if (sized >= static_cast<double>(kCap)) return kCap;
  return std::max<uint64_t>(kMinimumSizedBump, static_cast<uint64_t>(sized));
}

double log_write_rate(int64_t from_revision, int64_t from_micros, const std::vector<LogRateSample>& ends) {
  if (ends.empty()) return 0;
  const LogRateSample& last = ends.back();
  auto rate = [&](int64_t revision, int64_t ms) {
    const double seconds = static_cast<double>(last.observed_ms - ms) / 1000.0;
    return seconds > 0 ? static_cast<double>(last.revision - revision) / seconds : 0.0;
  };
  double best = from_micros > 0 ? rate(from_revision, from_micros / 1000) : 0.0;
  for (auto it = ends.rbegin(); it != ends.rend(); ++it) {
    if (it->observed_ms <= last.observed_ms - 60000) {
      best = std::max(best, rate(it->revision, it->observed_ms));
      break;
    }
  }
  return best;
}

bool holds_kubernetes_keys(const std::string& db_path, uint64_t db_bytes) {
  auto db = BoltReader::open(db_path, db_bytes);
  return holds_key_with_prefix(*db, kKubernetesKeyPrefix);
}

}  // namespace etcdadm

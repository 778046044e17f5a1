#include "etcd/etcd_version.h"

#include <algorithm>
#include <charconv>

namespace etcdadm {

namespace {

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

}  // namespace

std::optional<EtcdVersion> EtcdVersion::parse(std::string_view text) {
  if (!text.empty() && text.front() == 'v') text.remove_prefix(1);
  text = text.substr(0, text.find_first_of("-+"));  // "3.6.0-rc.1", "3.5.0+git"
  EtcdVersion v;
  auto dot1 = text.find('.');
  if (dot1 == std::string_view::npos || !parse_int(text.substr(0, dot1), v.major)) return std::nullopt;
  std::string_view rest = text.substr(dot1 + 1);
  auto dot2 = rest.find('.');
  if (!parse_int(rest.substr(0, dot2), v.minor)) return std::nullopt;
  if (dot2 != std::string_view::npos && !parse_int(rest.substr(dot2 + 1), v.patch)) return std::nullopt;
  return v;
}

std::string EtcdVersion::str() const { return minor_str() + "." + std::to_string(patch); }

std::string EtcdVersion::minor_str() const { return std::to_string(major) + "." + std::to_string(minor); }

bool restores_with_etcdutl(const EtcdVersion& v) { return v >= EtcdVersion{3, 5, 0}; }

bool wants_etcdctl_api_variable(const std::string& version) {
  auto v = EtcdVersion::parse(version);
  return !v || *v < EtcdVersion{3, 5, 0};
}

CrossVersionRestore cross_version_restore(const EtcdVersion& snapshot, const EtcdVersion& target) {
  CrossVersionRestore r;
  if (snapshot.same_minor(target)) return r;
  const std::string from = snapshot.minor_str();
  const std::string to = target.minor_str();
  if (target < snapshot) {
    // Measured: etcd 3.6 exits on a 3.7 snapshot ("version 3.7.0 is not supported"); 3.5 and 3.4
    // start on newer data but etcd supports no offline downgrade (3.6+ downgrades a running
    // cluster, which rewrites the storage version first).
    r.allowed = false;
    r.reason = "the backup was taken from etcd " + from + " and etcd " + to +
               " cannot run on data from a newer minor version (etcd supports no downgrade of a snapshot)";
    r.supported_path = "restore with etcd " + from + " or newer (init --from-backup --version " + from +
                       ".x, or an etcdutl " + from + " first on PATH); to run " + to +
                       " afterwards, use etcd's downgrade procedure on the running cluster";
    return r;
  }
  if (target.major != snapshot.major || target.minor > snapshot.minor + 1) {
    const std::string next =
        snapshot.major == 3 ? std::to_string(snapshot.major) + "." + std::to_string(snapshot.minor + 1) : from;
    r.allowed = false;
    r.reason = "the backup was taken from etcd " + from + " and etcd upgrades one minor version at a time (" + from +
               " -> " + next + "), so etcd " + to + " is not a supported start on it";
    r.supported_path = "restore with etcd " + next + " (init --from-backup --version " + next +
                       ".x), then upgrade the cluster member by member, one minor version at a time, to " + to;
    return r;
  }
  return r;  // one minor up: what a rolling upgrade does to the same data
}

}  // namespace etcdadm

namespace etcdadm {

bool supports_downgrade_api(const EtcdVersion& v) { return v >= EtcdVersion{3, 6, 0}; }

const char* version_step_name(VersionStepKind kind) {
  switch (kind) {
    case VersionStepKind::kSame:
      return "same";
    case VersionStepKind::kPatch:
      return "patch";
    case VersionStepKind::kUpgrade:
      return "upgrade";
    case VersionStepKind::kRollback:
      return "rollback";
    case VersionStepKind::kDowngrade:
      return "downgrade";
  }
  return "?";
}

namespace {

std::string minor_of(const EtcdVersion& v) { return v.minor_str(); }

EtcdVersion minor_plus(const EtcdVersion& v, int delta) { return EtcdVersion{v.major, v.minor + delta, 0}; }

// etcd's upgrade guides: "make sure that all of your 3.5 members are updated to 3.5.32 or later"
// (3.5.1-3.5.19 lose learner promotions on 3.6, issue 19557; 3.5.24-3.5.32 fix the v2store checks
// 3.6 makes at start), and "all of your 3.6 members are updated to 3.6.11 or later" for 3.7.
std::optional<EtcdVersion> minimum_patch_before_next_minor(const EtcdVersion& v) {
  if (v.same_minor(EtcdVersion{3, 5, 0})) return EtcdVersion{3, 5, 32};
  if (v.same_minor(EtcdVersion{3, 6, 0})) return EtcdVersion{3, 6, 11};
  return std::nullopt;
}

std::string minimum_patch_reason(const EtcdVersion& v) {
  if (v.same_minor(EtcdVersion{3, 5, 0})) {
    return "earlier 3.5 patches may turn promoted members back into learners on 3.6 (etcd issue 19557) or fail its "
           "v2store check at start";
  }
  return "earlier 3.6 patches may not roll to 3.7";
}

VersionStep refused(VersionStepKind kind, std::string reason, std::string path) {
  VersionStep s;
  s.kind = kind;
  s.allowed = false;
  s.reason = std::move(reason);
  s.supported_path = std::move(path);
  return s;
}

}  // namespace

// The rules and where they come from (docs/lifecycle.md): etcd's upgrade guides (3.5, 3.6) and
// downgrade guide (3.6), the v3.6.0 upgrade notice on 3.5.20, and what the real binaries did in
// the upgrade tests.
VersionStep check_version_step(const VersionStepInput& in) {
  const EtcdVersion& from = in.member;
  const EtcdVersion& to = in.target;
  VersionStep step;
  if (from == to) return step;
  if (from.major != to.major) {
    return refused(to > from ? VersionStepKind::kUpgrade : VersionStepKind::kDowngrade,
                   "etcd " + from.str() + " -> " + to.str() + " changes the major version, which etcdadm does not do",
                   "build a new cluster on " + to.str() + " and move the data with a backup");
  }
  if (from.same_minor(to)) {
    step.kind = VersionStepKind::kPatch;  // patch releases of a minor share their data format
    return step;
  }
  const bool up = to > from;
  const VersionStepKind kind = up ? VersionStepKind::kUpgrade : VersionStepKind::kDowngrade;
  if (to.minor > from.minor + 1 || to.minor + 1 < from.minor) {
    const EtcdVersion next = minor_plus(from, up ? 1 : -1);
    return refused(kind,
                   "etcd " + from.str() + " -> " + to.str() + " skips a minor version: etcd " +
                       (up ? "upgrades" : "downgrades") + " one minor version at a time",
                   "move every member to " + next.minor_str() + " first (" + minor_of(from) + " -> " +
                       next.minor_str() + " -> ... -> " + to.minor_str() + ")");
  }
  // Every member on one of the two minors involved: a third one means an earlier step is unfinished.
  for (const auto& m : in.members) {
    if (m.major != from.major || (m.minor != from.minor && m.minor != to.minor)) {
      return refused(
          kind, "a member of the cluster runs etcd " + m.str() + ", neither " + minor_of(from) + " nor " + minor_of(to),
          "bring every member to " + minor_of(from) + " first");
    }
  }
  if (up) {
    step.kind = VersionStepKind::kUpgrade;
    if (!in.cluster.same_minor(from)) {
      return refused(kind,
                     "the cluster version is " + minor_of(in.cluster) + ", not " + minor_of(from) +
                         ": this member runs an older minor than the cluster",
                     "bring this member to " + minor_of(in.cluster) + " first");
    }
    if (in.downgrade) {
      return refused(
          kind, "a downgrade of the cluster to " + minor_of(*in.downgrade) + " is in progress",
          "finish it (every member on " + minor_of(*in.downgrade) + "), or cancel it with `etcdctl downgrade cancel`");
    }
    // etcd's upgrade guides name the patch a minor must have reached before the next one.
    if (auto need = minimum_patch_before_next_minor(from); need && from < *need) {
      return refused(kind,
                     "etcd " + from.str() + " -> " + to.minor_str() + ": etcd's upgrade guide asks for " + need->str() +
                         " or newer before " + to.minor_str() + " (" + minimum_patch_reason(from) + ")",
                     "upgrade every member to the newest " + minor_of(from) + " patch first (a patch step), then to " +
                         to.minor_str());
    }
    return step;
  }
  // One minor down. The cluster still on the target's minor: this member went up while another
  // stayed behind, and a mixed cluster may return to the old binary (etcd's upgrade guides); the
  // same holds once a downgrade has lowered the cluster version.
  if (in.cluster.same_minor(to)) {
    step.kind = in.downgrade ? VersionStepKind::kDowngrade : VersionStepKind::kRollback;
    // No member left on the lower minor: the leader is raising the cluster version right now (it
    // checks every few seconds), after which the old binary cannot rejoin.
    bool one_stays =
        std::any_of(in.members.begin(), in.members.end(), [&](const EtcdVersion& m) { return m.same_minor(to); });
    if (!in.downgrade && !one_stays) {
      return refused(VersionStepKind::kRollback,
                     "every member runs " + minor_of(from) + ": etcd is moving the cluster version to " +
                         minor_of(from) + ", after which a binary rollback is not possible",
                     "stay on " + minor_of(from) +
                         (supports_downgrade_api(from) ? ", or downgrade through etcd's downgrade API once the "
                                                         "cluster version is " +
                                                             minor_of(from)
                                                       : ", or restore the backup taken before the upgrade"));
    }
    return step;
  }
  step.kind = VersionStepKind::kDowngrade;
  if (!supports_downgrade_api(from)) {
    return refused(kind,
                   "etcd " + minor_of(from) + " cannot be downgraded to " + minor_of(to) +
                       " once the cluster version is " + minor_of(in.cluster) +
                       ": etcdadm downgrades from 3.6 on, through etcd's downgrade API (etcd's own 3.5 -> 3.4 path "
                       "needs 3.4.32+ binaries started with --next-cluster-version-compatible and no auth)",
                   "restore a backup taken while the cluster ran " + minor_of(to) +
                       " into a new cluster (etcdadm init --from-backup), or stay on " + minor_of(from));
  }
  if (!in.cluster.same_minor(from)) {
    return refused(kind, "the cluster version is " + minor_of(in.cluster) + ", not " + minor_of(from),
                   "bring every member to " + minor_of(from) + " first");
  }
  for (const auto& m : in.members) {
    if (!m.same_minor(from)) {
      return refused(kind,
                     "a member runs etcd " + m.str() + ": a downgrade starts with every member on " + minor_of(from),
                     "bring every member to " + minor_of(from) + " first");
    }
  }
  // Enabled already (an earlier run whose member stopped before the leader lowered the cluster
  // version): only waited for.
  step.enable_downgrade = !(in.downgrade && in.downgrade->same_minor(to));
  return step;
}

}  // namespace etcdadm

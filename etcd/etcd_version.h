// etcd versions, and everything etcdadm does differently for them, decided here and nowhere else:
// which tool restores a snapshot, whether etcdctl wants ETCDCTL_API, and which restores across
// versions etcd supports. docs/etcd-versions.md has the table of what each rule is verified by.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace etcdadm {

struct EtcdVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;

  // "3.5.17", "v3.5.17", "3.6.0-rc.1" (the suffix is dropped), "3.6" (patch 0). nullopt otherwise.
  static std::optional<EtcdVersion> parse(std::string_view text);
  std::string str() const;        // "3.5.17"
  std::string minor_str() const;  // "3.5"
  auto operator<=>(const EtcdVersion&) const = default;
  bool same_minor(const EtcdVersion& o) const { return major == o.major && minor == o.minor; }
};

// etcd's restore tool for a version: etcdutl from 3.5 (etcdctl 3.5 still restores, deprecated;
// etcdctl 3.6 cannot), `etcdctl snapshot restore` before. An unknown version: etcdutl if present.
bool restores_with_etcdutl(const EtcdVersion& v);

// Whether etcdctl (and etcdutl) of `version` should get ETCDCTL_API=3: etcd 3.4 and older (3.3's
// etcdctl defaulted to the v2 API); 3.5+ tools warn about the variable on every call. An empty or
// unparseable version gets it (it is what works with the oldest tools).
bool wants_etcdctl_api_variable(const std::string& version);

// Whether a snapshot taken from etcd `snapshot` may be restored for a member that runs etcd
// `target`, as etcd allows it: the same minor, or one minor up (etcd upgrades one minor at a time;
// a restored member starts as the upgraded one would, e.g. 3.6 only on data that ran on 3.5).
// Never down: etcd does not start on (or silently misreads) data from a newer minor.
struct CrossVersionRestore {
  bool allowed = true;
  std::string reason;          // why not (empty when allowed)
  std::string supported_path;  // what to do instead (empty when allowed)
};
CrossVersionRestore cross_version_restore(const EtcdVersion& snapshot, const EtcdVersion& target);

// ---- changing the version a running member runs (etcdadm upgrade) ----

// Whether etcd of this version has the downgrade API (Maintenance.Downgrade: validate, enable,
// cancel), through which a cluster's version is lowered one minor before its members' binaries.
bool supports_downgrade_api(const EtcdVersion& v);

enum class VersionStepKind {
  kSame,       // the member runs the target already
  kPatch,      // another patch of the same minor (either way)
  kUpgrade,    // one minor up, the cluster on the member's minor
  kRollback,   // one minor down to the cluster version the cluster never left (a mixed cluster)
  kDowngrade,  // one minor down through etcd's downgrade API (the cluster version goes down first)
};
const char* version_step_name(VersionStepKind kind);  // "same", "patch", "upgrade", "rollback", "downgrade"

// What the cluster looks like when one member is to move to `target`.
struct VersionStepInput {
  EtcdVersion member;                    // what this member runs now
  EtcdVersion target;                    // what it is to run
  EtcdVersion cluster;                   // the cluster version (etcd's /version "etcdcluster")
  std::vector<EtcdVersion> members;      // what every member of the cluster runs (this one included)
  std::optional<EtcdVersion> downgrade;  // the target of a downgrade in progress (3.6+ status)
};

struct VersionStep {
  VersionStepKind kind = VersionStepKind::kSame;
  bool allowed = true;
  std::string reason;          // why not (empty when allowed)
  std::string supported_path;  // what to do instead (empty when allowed)
  // kDowngrade: etcd's downgrade is not enabled yet, so it has to be validated and enabled
  // before this member's binary changes.
  bool enable_downgrade = false;
};

// etcd's version rules for moving one member (docs/lifecycle.md has the table and its sources):
// members move one minor at a time, up only from a cluster whose version is the member's minor
// (the cluster version is the lowest minor its members run, so it moves once all are up), and
// only from the patch etcd's guide names (3.5.32 before 3.6, 3.6.11 before 3.7);
// down only as a rollback to the cluster version a mixed cluster still has, or from 3.6 on through
// etcd's downgrade API, with every member on the same minor.
VersionStep check_version_step(const VersionStepInput& in);

}  // namespace etcdadm

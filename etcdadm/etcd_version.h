// etcd versions, and everything etcdadm does differently for them, decided here and nowhere else:
// which tool restores a snapshot, whether etcdctl wants ETCDCTL_API, and which restores across
// versions etcd supports. docs/etcd-versions.md has the table of what each rule is verified by.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

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

}  // namespace etcdadm

#include "etcdadm/etcd_version.h"

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
    const std::string next = snapshot.major == 3 ? std::to_string(snapshot.major) + "." + std::to_string(snapshot.minor + 1)
                                                 : from;
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

// The etcd the tests run against. One setting chooses it: ETCDADM_TEST_ETCD=<minor> ("3.4", the
// default, is Debian's /usr/bin/etcd; "3.5", "3.6", "3.7" are built from etcd's Go modules by
// scripts/etcd-versions.sh). The versions are pinned in test/etcd-versions/versions; ctest runs the
// end-to-end suites once per pinned minor (labels etcd-3.4 ... etcd-3.7).
//
// The test mains call use_etcd_under_test() first: it puts that release's bin dir first on PATH,
// so `etcd`, `etcdctl` and `etcdutl` in tests, and the etcdutl/etcdctl that etcdadm's restore looks
// up on PATH, are all the version under test, as on an operator's host.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "common/subprocess.h"

namespace etcdadm::test {

struct EtcdRelease {
  std::string minor;    // "3.6"
  std::string version;  // "3.6.16"
  std::string bin_dir;  // holds etcd and etcdctl, and etcdutl from 3.5 on

  std::string etcd() const { return bin_dir + "/etcd"; }
  std::string etcdctl() const { return bin_dir + "/etcdctl"; }
  // etcdutl on 3.5+; "" on 3.4, which has none.
  std::string etcdutl() const { return has_etcdutl() ? bin_dir + "/etcdutl" : ""; }
  bool has_etcdutl() const { return minor_number() >= 5; }
  // The tool for offline snapshot work (`snapshot status`, `snapshot restore`): etcdutl from 3.5
  // (etcdctl 3.6 no longer has them), `etcdctl` (with ETCDCTL_API=3) on 3.4.
  std::string snapshot_tool() const { return has_etcdutl() ? etcdutl() : etcdctl(); }
  int minor_number() const;  // 4 for "3.4"
  bool at_least(const std::string& other_minor) const;
  // The cluster version etcd reports for a cluster of this version ("3.6.0").
  std::string cluster_version() const { return minor + ".0"; }
};

// Every pinned minor, oldest first.
std::vector<std::string> pinned_etcd_minors();

// The pinned minor `delta` places from `minor` (-1: the one before, 1: the one after), "" when
// there is none.
std::string pinned_minor_beside(const std::string& minor, int delta);

// The release for `minor`, its binaries checked (present, reporting the pinned version). Throws
// std::runtime_error naming the command that builds them when they are not.
EtcdRelease etcd_release(const std::string& minor);

// Whether `minor`'s binaries are present (for cross-version tests that skip a missing neighbour
// only outside CI; CI builds every pinned minor).
bool etcd_release_available(const std::string& minor);

// The release selected by ETCDADM_TEST_ETCD (checked on first use).
const EtcdRelease& etcd_under_test();

// Puts the selected release's bin dir first on PATH (no check: a test listing must work without
// the binaries). Call once from main, before any thread starts.
void use_etcd_under_test();

// Options for running etcdctl of the etcd under test: ETCDCTL_API=3 on 3.4 (harmless there), never
// on 3.5+, whose etcdctl and etcdutl warn about it on stderr (which tests read with stdout).
RunOptions etcdctl_options();

// The version a stand-in etcdutl (a script that fails, hangs or records its arguments) reports so
// that a restore of the etcd under test's backups gets past the cross-version check: that version
// on 3.5+; "3.5.0" on 3.4 (a one-minor upgrade, which is allowed; 3.4 has no etcdutl of its own).
std::string stand_in_etcdutl_version();

// `<snapshot tool> snapshot status FILE -w json` of `release` (etcdutl 3.5+, etcdctl 3.4), parsed;
// an oracle for what we write. Fails the test (and returns null) when the tool refuses the file.
nlohmann::json snapshot_status(const std::string& file, const EtcdRelease& release = etcd_under_test());

// `<snapshot tool> snapshot restore FILE args...` of `release`, as the peer tool restores.
ProcessResult snapshot_restore_with_tool(const std::string& file, const std::vector<std::string>& args,
                                         const EtcdRelease& release = etcd_under_test());

}  // namespace etcdadm::test

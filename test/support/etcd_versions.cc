#include "test/support/etcd_versions.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "common/fs.h"
#include "common/subprocess.h"
#include "etcd/etcd_version.h"
#include "etcdadm/release/install.h"

namespace etcdadm::test {

namespace {

const char* kSelector = "ETCDADM_TEST_ETCD";
const char* kDefaultMinor = "3.4";

std::string script() { return std::string(ETCDADM_SOURCE_DIR) + "/scripts/etcd-versions.sh"; }

std::string run_script(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"bash", script()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_process(argv);
  if (r.exit_code != 0) throw std::runtime_error("scripts/etcd-versions.sh failed: " + r.output);
  return r.output;
}

std::string selected_minor() {
  const char* v = std::getenv(kSelector);
  return v && *v ? v : kDefaultMinor;
}

// The pinned version and its bin dir, from the script that builds them (one rule for both).
EtcdRelease describe(const std::string& minor) {
  static std::mutex mu;
  static std::map<std::string, EtcdRelease> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(minor);
  if (it != known.end()) return it->second;
  std::istringstream in(run_script({"--where", minor}));
  EtcdRelease r;
  r.minor = minor;
  in >> r.version >> r.bin_dir;
  if (r.version.empty() || r.bin_dir.empty()) throw std::runtime_error("etcd-versions.sh --where " + minor + ": no answer");
  return known[minor] = r;
}

// Empty when every binary is there and reports the pinned version; else what is wrong.
std::string problem_with(const EtcdRelease& r) {
  std::vector<std::string> binaries = {r.etcd(), r.etcdctl()};
  if (r.has_etcdutl()) binaries.push_back(r.etcdutl());
  for (const auto& b : binaries) {
    if (!path_exists(b)) return b + " is missing";
    std::string reported;
    try {
      reported = binary_version(b);
    } catch (const std::exception& e) {
      return e.what();
    }
    if (reported != r.version) return b + " reports " + reported + ", not the pinned " + r.version;
  }
  return "";
}

}  // namespace

int EtcdRelease::minor_number() const { return EtcdVersion::parse(minor).value().minor; }

bool EtcdRelease::at_least(const std::string& other_minor) const {
  return EtcdVersion::parse(minor).value() >= EtcdVersion::parse(other_minor).value();
}

std::vector<std::string> pinned_etcd_minors() {
  std::vector<std::string> out;
  std::istringstream in(run_script({"--list"}));
  for (std::string m; in >> m;) out.push_back(m);
  return out;
}

std::string pinned_minor_beside(const std::string& minor, int delta) {
  const auto minors = pinned_etcd_minors();
  for (size_t i = 0; i < minors.size(); ++i) {
    const auto j = static_cast<std::ptrdiff_t>(i) + delta;
    if (minors[i] == minor && j >= 0 && j < static_cast<std::ptrdiff_t>(minors.size())) return minors[j];
  }
  return "";
}

EtcdRelease etcd_release(const std::string& minor) {
  EtcdRelease r = describe(minor);
  std::string problem = problem_with(r);
  if (!problem.empty()) {
    throw std::runtime_error("etcd " + r.version + " for the tests is not usable (" + problem +
                             "): run `bash scripts/etcd-versions.sh " + minor + "`");
  }
  return r;
}

bool etcd_release_available(const std::string& minor) { return problem_with(describe(minor)).empty(); }

const EtcdRelease& etcd_under_test() {
  static const EtcdRelease r = etcd_release(selected_minor());
  return r;
}

void use_etcd_under_test() {
  EtcdRelease r = describe(selected_minor());
  const char* path = std::getenv("PATH");
  std::string joined = r.bin_dir + ":" + (path ? path : "/usr/local/bin:/usr/bin:/bin");
  ::setenv("PATH", joined.c_str(), 1);
}

std::string stand_in_etcdutl_version() {
  return etcd_under_test().has_etcdutl() ? etcd_under_test().version : "3.5.0";
}

RunOptions etcdctl_options() {
  RunOptions o;
  if (etcd_under_test().has_etcdutl()) {
    o.unset_env.push_back("ETCDCTL_API");
  } else {
    o.env["ETCDCTL_API"] = "3";
  }
  return o;
}

nlohmann::json snapshot_status(const std::string& file, const EtcdRelease& release) {
  auto r = run_process({release.snapshot_tool(), "snapshot", "status", file, "-w", "json"}, etcdctl_options());
  EXPECT_EQ(r.exit_code, 0) << release.snapshot_tool() << " snapshot status " << file << ": " << r.output;
  auto brace = r.output.find('{');
  if (r.exit_code != 0 || brace == std::string::npos) return nullptr;
  return nlohmann::json::parse(r.output.substr(brace, r.output.rfind('}') - brace + 1));
}

ProcessResult snapshot_restore_with_tool(const std::string& file, const std::vector<std::string>& args,
                                         const EtcdRelease& release) {
  std::vector<std::string> argv = {release.snapshot_tool(), "snapshot", "restore", file};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, etcdctl_options());
}

}  // namespace etcdadm::test

// The deployment examples in docs/deploy stay valid: the systemd unit passes `systemd-analyze
// verify` (with ExecStart pointed at the binary under test), and the cron example's schedules parse.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "backup/schedule.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

const std::string kDeploy = std::string(ETCDADM_SOURCE_DIR) + "/docs/deploy";

// `systemd-analyze verify` of the unit `file` in docs/deploy/systemd (verified as `instance`, for a
// template), its ExecStart pointed at the binary under test and its EnvironmentFile at a scratch
// path (`env_file` in the unit) that may be missing.
void verify_unit(const std::string& file, const std::string& instance, const std::string& env_file) {
  auto analyze = find_executable("systemd-analyze");
  ASSERT_TRUE(analyze.has_value()) << "systemd-analyze missing (scripts/install-deps.sh --with-test-servers installs it)";
  test::TempDir dir;
  std::string unit = read_file(kDeploy + "/systemd/" + file);
  auto replace = [&](const std::string& from, const std::string& to) {
    auto at = unit.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    unit.replace(at, from.size(), to);
  };
  replace("/usr/bin/etcdadm", ETCDADM_BIN);
  // verify runs `man` on man: links; etcdadm(1) exists once the package is installed, not here.
  replace("Documentation=man:etcdadm(1) ", "Documentation=");
  replace("EnvironmentFile=" + env_file, "EnvironmentFile=-" + dir / "unit.env");
  write_file_atomic(dir / file, unit);
  auto r = run_process({*analyze, "verify", dir / instance});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("Unknown"), std::string::npos) << r.output;
}

TEST(Deploy, SystemdUnitVerifies) {
  // A template is verified through an instance of it.
  verify_unit("etcdadm-backup-sidecar@.service", "etcdadm-backup-sidecar@main.service", "/etc/etcdadm/sidecar/%i.env");
  // The example environment file holds what the unit reads.
  std::string env = read_file(kDeploy + "/systemd/sidecar.env.example");
  for (const char* name : {"ETCDADM_STORE=", "ETCDCTL_ENDPOINTS=", "SIDECAR_ARGS="}) EXPECT_NE(env.find(name), std::string::npos) << name;
}

TEST(Deploy, AutoUnitVerifiesAndItsExamplesGiveWhatItReads) {
  verify_unit("etcdadm-auto.service", "etcdadm-auto.service", "/etc/etcdadm/auto.env");
  std::string env = read_file(kDeploy + "/systemd/auto.env.example");
  for (const char* name : {"ETCDADM_STORE=", "AUTO_ARGS="}) EXPECT_NE(env.find(name), std::string::npos) << name;
  // Every flag the examples pass is one `etcdadm auto` takes.
  std::string pod = read_file(kDeploy + "/kubernetes/etcdadm-auto-static-pod.yaml");
  auto help = run_process({ETCDADM_BIN, "auto", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.output;
  std::string flags = env + pod;
  for (size_t at = 0; (at = flags.find("--", at)) != std::string::npos;) {
    size_t end = flags.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-", at + 2);
    const std::string flag = flags.substr(at, end - at);
    at = end;
    if (flag.size() > 2) {
      EXPECT_NE(help.output.find(flag), std::string::npos) << flag << " is not a flag of etcdadm auto";
    }
  }
}

TEST(Deploy, CronExampleSchedulesParse) {
  std::istringstream in(read_file(kDeploy + "/cron/etcdadm-backup"));
  int jobs = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.find('=') < line.find(' ')) continue;
    std::istringstream fields(line);
    std::string f[5];
    for (auto& x : f) fields >> x;
    EXPECT_NO_THROW(Schedule::parse(f[0] + " " + f[1] + " " + f[2] + " " + f[3] + " " + f[4])) << line;
    EXPECT_NE(line.find("etcdadm"), std::string::npos);
    ++jobs;
  }
  EXPECT_EQ(jobs, 2);
}

}  // namespace
}  // namespace etcdadm

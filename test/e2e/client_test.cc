// The etcd client and restore-tool plumbing against real members: auth token renewal, a member
// that hangs (timeout, not a mystery), and the etcdutl (3.5+) restore path.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "restore/data_dir.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"

namespace etcdadm::test {

class Client : public CliTest {};

TEST_F(Client, RenewsAnExpiredAuthToken) {
  // Simple tokens expire after --auth-token-ttl seconds; the client must re-authenticate by itself.
  EtcdOptions o;
  o.extra_flags = {"--auth-token-ttl=1"};
  auto& m = start_member(o);
  RunOptions api3 = etcdctl_options();
  for (auto args : std::vector<std::vector<std::string>>{{"user", "add", "root:pw"}, {"auth", "enable"}}) {
    std::vector<std::string> argv = {"etcdctl", "--endpoints", m.client_url()};
    argv.insert(argv.end(), args.begin(), args.end());
    ASSERT_EQ(run_process(argv, api3).exit_code, 0);
  }
  ConnectionConfig c = m.connection();
  c.user = "root";
  c.password = "pw";
  spdlog::set_level(spdlog::level::debug);  // the log shows the renewal happening
  EtcdClient client(c);
  client.put("/a", "1");
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_NO_THROW(client.put("/b", "2"));  // the first token expired in between
  EXPECT_NO_THROW(client.status(m.client_url()));
}

TEST_F(Client, HungMemberTimesOutClearly) {
  auto& m = start_member();
  m.kill_now(SIGSTOP);
  auto t0 = std::chrono::steady_clock::now();
  auto r = cli({"backup", "save", "--store", store_, "--endpoints", m.client_url(), "--dial-timeout", "1s", "--command-timeout", "1s"});
  m.kill_now(SIGCONT);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_TRUE(r.output.find("timed out") != std::string::npos || r.output.find("timeout") != std::string::npos) << r.output;
  EXPECT_LT(secs, 20);  // bounded by the timeouts, not hanging
}

TEST_F(Client, RestoresThroughEtcdutlWhenPresent) {
  // With --restore-with etcdutl, a stand-in `etcdutl` first on PATH forwards to the real etcdutl
  // (3.5+) or, on 3.4, which has none, to etcdctl: it proves that the 3.5+ tool is found and given
  // the arguments etcdutl accepts.
  auto& m = start_member();
  EtcdClient client(m.connection());
  client.put("/via/etcdutl", "yes");
  save(m);
  std::string bin = dir_ / "bin";
  make_dirs(bin);
  std::string argv_log = dir_ / "etcdutl-argv";
  write_file_atomic(bin + "/etcdutl",
                    "#!/bin/sh\n"
                    "if [ \"$1\" = version ]; then echo 'etcdutl version: " + stand_in_etcdutl_version() + "'; exit 0; fi\n"
                    "echo \"$@\" > '" + argv_log + "'\n" +
                    (etcd_under_test().has_etcdutl() ? "" : "ETCDCTL_API=3 ") + "exec '" +
                        etcd_under_test().snapshot_tool() + "' \"$@\"\n",
                    0755);
  RunOptions path;
  path.env["PATH"] = bin + ":" + std::string(std::getenv("PATH"));
  std::string data = dir_ / "restored";
  auto r = cli({"backup", "restore", "latest", "--store", store_, "--data-dir", data, "--name", "x",
                "--initial-advertise-peer-urls", "http://127.0.0.1:1", "--restore-with", "etcdutl", "-o", "json"},
               path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(bin + "/etcdutl " + stand_in_etcdutl_version()), std::string::npos) << r.output;
  std::string args = read_file(argv_log);
  EXPECT_EQ(args.find("snapshot restore "), 0u) << args;
  EXPECT_NE(args.find("--initial-cluster=x=http://127.0.0.1:1"), std::string::npos) << args;
  struct stat st;
  ASSERT_EQ(::stat(data.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);  // etcd 3.5+ refuses wider data dirs
}

}  // namespace etcdadm::test

// The etcd client and restore-tool plumbing against real members: auth token renewal, a member
// that hangs (timeout, not a mystery), a stalled endpoint failed over once, members killed and restarted under thousands of calls, and
// the etcdutl (3.5+) restore path.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "restore/data_dir.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"
#include "test/support/log_capture.h"

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
  // The client's debug log says when it renews: captured, so the test knows a renewal happened
  // (a token that had not expired would pass the calls below without one).
  LogCapture log(spdlog::level::debug);
  EtcdClient client(c);
  client.put("/a", "1");
  EXPECT_FALSE(log.has("re-authenticating")) << log.text();
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_NO_THROW(client.put("/b", "2"));  // the first token expired in between
  EXPECT_NO_THROW(client.status(m.client_url()));
  EXPECT_TRUE(log.has("auth token for " + m.client_url() + " expired; re-authenticating")) << log.text();
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

TEST_F(Client, AStalledEndpointCostsItsTimeoutOnceNotOnEveryCall) {
  // The cluster's endpoints in the order a user gave them, the first one stalled (a member stopped
  // mid-restart, a host behind a dropped route). The client fails over once and then keeps to the
  // member that answered; the debug log counts each failover.
  auto& m = start_member();
  SilentListener stalled;
  ConnectionConfig c = m.connection();
  const std::string scheme = m.client_url().substr(0, m.client_url().find("://") + 3);
  c.endpoints = {scheme + "127.0.0.1:" + std::to_string(stalled.port()), m.client_url()};
  c.dial_timeout = std::chrono::milliseconds(300);
  c.command_timeout = std::chrono::seconds(1);
  LogCapture log(spdlog::level::debug);
  EtcdClient client(c);
  for (int i = 0; i < 10; ++i) EXPECT_NO_THROW(client.put("/k" + std::to_string(i), "v")) << i;
  EXPECT_EQ(client.member_list().members_size(), 1);
  EXPECT_EQ(log.count("trying the next endpoint"), 1u) << log.text();
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

// Members going away under calls, over and over: the client that the sidecar, `upgrade apply` and
// the controllers use while members restart must turn each such call into an error (or a failover
// to another member), never abort the process. With gRPC's built-in retries on, Debian's gRPC 1.51
// aborted inside its retry filter here (an assertion on an empty optional<grpc_status_code>,
// grpc/grpc#34683); client.cc turns them off. Six callers (each with its own client, as the
// sidecar's loops have) and a reader of the member being restarted run through 24 restarts of a
// 3-member TLS cluster, SIGKILL and SIGTERM in turn. Without the fix it aborts within seconds.
TEST_F(Client, SurvivesMembersKilledAndRestartedUnderThousandsOfCalls) {
  TlsFiles tls = make_tls_files(dir_ / "tls");
  EtcdOptions o;
  o.tls = true;  // as the sidecar and `upgrade apply` talk to members: TLS with client certificates
  o.tls_files = &tls;
  // Short elections: the test is about calls that meet a restart, not about waiting for leaders.
  o.extra_flags = {"--heartbeat-interval=20", "--election-timeout=200"};
  std::vector<EtcdMember*> m = start_cluster(3, o);

  ConnectionConfig all = m[0]->connection();
  all.endpoints = {m[0]->client_url(), m[1]->client_url(), m[2]->client_url()};
  all.dial_timeout = std::chrono::milliseconds(500);
  all.command_timeout = std::chrono::milliseconds(2000);

  std::atomic<bool> done{false};
  std::atomic<int> succeeded{0}, failed{0};
  std::mutex mu;
  std::map<std::string, int> unexpected;  // errors of a kind a restart does not explain
  auto count_error = [&](const Error& e) {
    ++failed;
    // A member going away refuses the connection, drops it, or closes it mid-handshake.
    bool expected = e.kind() == ErrorKind::kUnavailable || e.kind() == ErrorKind::kTimeout ||
                    (e.kind() == ErrorKind::kTls && e.mentions("the server closed the connection"));
    if (!expected) {
      std::lock_guard<std::mutex> lock(mu);
      ++unexpected[e.what()];
    }
  };
  // Calls in flight when a member goes: callers whose first endpoint is each member in turn, each
  // reading a 256 KiB value (which keeps a call on the wire a while) three times in four and
  // writing a small one the fourth (so that the members' WAL and db stay small and restart fast), and a caller of the member being
  // restarted. A failed call waits 2 ms, so that a member that is down is not asked in a busy loop.
  std::atomic<int> victim{0};
  {
    EtcdClient loader(all);
    loader.put("/stress/big", std::string(256 << 10, 'v'));
  }
  etcdserverpb::RangeRequest read_big;
  read_big.set_key("/stress/big");
  read_big.set_serializable(true);
  std::vector<std::thread> callers;
  for (int w = 0; w < 6; ++w) {
    callers.emplace_back([&, w] {
      ConnectionConfig own = all;
      std::rotate(own.endpoints.begin(), own.endpoints.begin() + w % 3, own.endpoints.end());
      EtcdClient client(own);
      for (int i = 0; !done; ++i) {
        try {
          if (i % 4 != 3) {
            client.range(read_big);
          } else {
            client.put("/stress/" + std::to_string(w) + "/" + std::to_string(i % 50), std::to_string(i));
          }
          ++succeeded;
        } catch (const Error& e) {
          count_error(e);
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      }
    });
  }
  callers.emplace_back([&] {
    EtcdClient client(all);
    while (!done) {
      try {
        client.status(m[victim]->client_url());
        ++succeeded;
      } catch (const Error& e) {
        count_error(e);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  });

  constexpr int kRestarts = 24;
  std::string restart_failure;
  for (int round = 0; round < kRestarts && restart_failure.empty(); ++round) {
    victim = round % 3;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    if (round % 2 == 0) {
      m[victim]->kill_now(SIGKILL);
    }
    m[victim]->stop();  // SIGTERM (a graceful shutdown sends GOAWAY), or the reap of the SIGKILLed one
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      m[victim]->start();
    } catch (const std::exception& e) {
      restart_failure = "round " + std::to_string(round) + ": " + e.what();
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  done = true;
  for (auto& t : callers) t.join();
  ASSERT_EQ(restart_failure, "");

  std::printf("[stress] %d calls succeeded and %d failed over %d restarts\n", succeeded.load(), failed.load(), kRestarts);
  EXPECT_GE(succeeded.load() + failed.load(), 2000) << "fewer calls than the test is about";
  EXPECT_GT(failed.load(), 0) << "no call met a restart";
  for (const auto& [what, n] : unexpected) ADD_FAILURE() << n << " x " << what;
  // Every member serves afterwards, through the same kind of client.
  EtcdClient after(all);
  for (auto* x : m) EXPECT_NO_THROW(after.status(x->client_url()));
  EXPECT_NO_THROW(after.put("/stress/after", "1"));
}

}  // namespace etcdadm::test

// Every row of the exit-code table in docs/operations.md, on real etcd: each failure class ends
// with its documented status and a message that says what to do. (130/143 are in interrupt_test;
// 1 is "a bug", which no test can provoke on purpose.)
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "common/fs.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"

namespace etcdadm::test {
namespace {

class ExitCodes : public CliTest {
 protected:
  void expect(const std::vector<std::string>& args, int code, const std::string& needle) {
    auto r = cli(args);
    EXPECT_EQ(r.exit_code, code) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.output;
  }
};

TEST_F(ExitCodes, Row2InvalidArgument) {
  TlsFiles tls = make_tls_files(dir_ / "pki");
  write_file_atomic(dir_ / "garbage.pem", "not a certificate\n");
  std::vector<std::string> save = {"backup", "save", "--store", store_};
  auto with = [&](std::vector<std::string> extra) {
    auto v = save;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  expect(with({"--endpoints", "not a url"}), 2, "malformed endpoint 'not a url'");
  expect(with({"--endpoints", "127.0.0.1:99999"}), 2, "malformed endpoint");
  expect(with({"--endpoints", "https://127.0.0.1:2379", "--cacert", tls.ca_cert, "--cert", tls.client_cert, "--key",
               tls.server_key}),
         2, "does not match the certificate");
  expect(with({"--endpoints", "https://127.0.0.1:2379", "--cacert", tls.ca_cert, "--cert", dir_ / "garbage.pem", "--key",
               tls.client_key}),
         2, "is not a PEM certificate");
  expect(with({"--endpoints", "https://127.0.0.1:2379", "--cacert", dir_ / "garbage.pem"}), 2, "holds no PEM certificate");
  expect(with({"--dial-timeout", "soon"}), 2, "--dial-timeout");
  expect({"backup", "save", "--store", "s3:/bucket/etcd"}, 2, "did you mean s3://bucket/etcd");
  expect({"backup", "frobnicate"}, 2, "subcommand");
  // A mistyped subcommand beside a --version of its own is an error, not the version (it used to
  // print "etcdadm 0.1.0" and exit 0: a script's upgrade step silently did nothing).
  auto typo = cli({"upgrade", "aply", "--version", "3.5.1"});
  EXPECT_EQ(typo.exit_code, 2) << typo.output;
  EXPECT_EQ(typo.output.find("etcdadm 0."), std::string::npos) << typo.output;
  EXPECT_EQ(cli({"backup", "list", "--version"}).exit_code, 2);
  for (const std::vector<std::string>& asked : {std::vector<std::string>{"--version"}, {"version"}}) {
    auto v = cli(asked);
    EXPECT_EQ(v.exit_code, 0) << v.output;
    EXPECT_EQ(v.output.rfind("etcdadm ", 0), 0u) << v.output;
  }
  EXPECT_FALSE(path_exists(store_)) << "a refused command created the store";
}

TEST_F(ExitCodes, Row3NotFoundRow4AlreadyExistsRow9ExternalTool) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  client.put("/k", "v");
  save(m);
  expect({"backup", "restore", "2020-01-01T00", "--store", store_, "--output", dir_ / "x.db"}, 3, "no backup '2020-01-01T00'");
  // A reset with no member to reset (no state file in --config-dir, no --name and --data-dir)
  // changes nothing and says so (it printed "Reset member <host>" and exited 0).
  make_dirs(dir_ / "no-member", 0700);
  expect({"reset", "--config-dir", dir_ / "no-member", "--skip-remove-member", "--certs-dir", dir_ / "no-member-pki"}, 3,
         "no etcdadm member state in");
  expect({"recover", "--config-dir", dir_ / "no-member"}, 3, "no etcdadm member state in");
  std::string data = dir_ / "data";
  make_dirs(data);
  write_file_atomic(data + "/keep", "x");
  expect({"backup", "restore", "latest", "--store", store_, "--data-dir", data, "--name", "m1",
          "--initial-advertise-peer-urls", m.peer_url()},
         4, "is not empty");
  // A file is no data dir: said first, not "not empty, pass --force", which would not help.
  expect({"backup", "restore", "latest", "--store", store_, "--data-dir", data + "/keep", "--name", "m1",
          "--initial-advertise-peer-urls", m.peer_url()},
         4, "exists and is not a directory");
  EXPECT_EQ(read_file(data + "/keep"), "x");
  expect({"backup", "restore", "latest", "--store", store_, "--data-dir", m.options().data_dir, "--force", "--name", "m1",
          "--initial-advertise-peer-urls", m.peer_url()},
         4, "in use");
  std::string tool = dir_ / "broken-etcdutl";
  write_file_atomic(tool,
                    "#!/bin/sh\n[ \"$1\" = version ] && { echo 'etcdutl version: " + stand_in_etcdutl_version() +
                        "'; exit 0; }\necho boom >&2; exit 3\n",
                    0755);
  expect({"backup", "restore", "latest", "--store", store_, "--data-dir", dir_ / "new", "--name", "m1",
          "--initial-advertise-peer-urls", m.peer_url(), "--restore-tool", tool},
         9, "snapshot restore failed");
  EXPECT_FALSE(path_exists(dir_ / "new"));
}

TEST_F(ExitCodes, Row5CorruptIncludingGarbageMetadata) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  client.put("/k", "v");
  std::string name = save(m)["backup"];
  write_file_atomic(store_ + "/" + name + "/etcdadm-backup.json", "{ this is not json");
  cli({"backup", "list", "--store", store_, "--rebuild-catalog"});
  expect({"backup", "verify", name, "--store", store_}, 5, "damaged");
  expect({"backup", "restore", name, "--store", store_, "--output", dir_ / "x.db"}, 5, "damaged");
  EXPECT_FALSE(path_exists(dir_ / "x.db"));
}

TEST_F(ExitCodes, Row6UnavailableAndTheDialTimeoutMeansWhatItSays) {
  expect({"backup", "save", "--store", store_, "--endpoints", "127.0.0.1:" + std::to_string(free_port())}, 6,
         "connection refused");
  // A listener that completes TCP handshakes (the kernel does, from the backlog) and never answers:
  // a hung member, or the wrong service. --dial-timeout 1s must fail in about 1 s, not wait out the
  // command timeout (10 s) as well.
  SilentListener silent;
  auto t0 = std::chrono::steady_clock::now();
  expect({"backup", "save", "--store", store_, "--endpoints", "127.0.0.1:" + std::to_string(silent.port()), "--dial-timeout", "1s",
          "--command-timeout", "10s"},
         6, "within the dial timeout");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 5.0) << "--dial-timeout 1s took " << seconds << " s";
  EXPECT_FALSE(path_exists(store_));
}

TEST_F(ExitCodes, Row7AuthIncludingAuthEnabledWithoutAUser) {
  auto& m = start_member();
  enable_auth_with_root(m, "r00t-pass");
  expect({"backup", "save", "--store", store_, "--endpoints", m.client_url()}, 7, "pass --user");
  expect({"backup", "save", "--store", store_, "--endpoints", m.client_url(), "--user", "root", "--password", "nope"}, 7,
         "authentication");
  EXPECT_EQ(cli({"backup", "save", "--store", store_, "--endpoints", m.client_url(), "--user", "root:r00t-pass"}).exit_code, 0);
}

TEST_F(ExitCodes, Row8LocalIo) {
  auto& m = start_member();
  write_file_atomic(dir_ / "a-file", "x");
  expect({"backup", "save", "--store", dir_ / "a-file/store", "--endpoints", m.client_url()}, 8, "a-file");
}

}  // namespace
}  // namespace etcdadm::test

// Cluster API's etcdadm bootstrap provider (EKS Anywhere's etcd machines; facts:
// ../shared/reference/adoption.md): its cloud-init runs `etcdadm init` on the first machine and
// `etcdadm join <client URL>` on the others with the flags it builds, in its order
// (`--init-system`, `--version`, `--release-url`, `--install-dir`, `--cipher-suites`), after writing
// the cluster CA to the certs dir; its controller then asks each member `GET /health` over TLS with
// a client certificate of that CA and wants `"health": "true"`. Oracles: etcd's own /health answer
// (curl), and OpenSSL's s_client for what the member's TLS 1.2 listener accepts.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/fs.h"
#include "etcdadm/member_config.h"
#include "test/support/lifecycle_fixture.h"

namespace etcdadm::test {
namespace {

class ClusterApi : public LifecycleFixture {
 protected:
  // Cluster API's flags after the test's own member flags (each host's dirs and ports).
  std::vector<std::string> provider_flags() const { return {"--cipher-suites", kSuites}; }

  // etcd's /health on `h`'s client URL, asked as the provider's controller asks it.
  nlohmann::json health(const Host& h) {
    const auto conn = connection({&h});
    auto r = run_process({"curl", "--silent", "--show-error", "--max-time", "10", "--cacert", conn.cacert, "--cert",
                          conn.cert, "--key", conn.key, h.client_url() + "/health"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output, nullptr, false);
  }

  // Whether `h`'s client listener completes a TLS 1.2 handshake offering only `openssl_cipher`.
  bool tls12_accepts(const Host& h, const std::string& openssl_cipher) {
    const auto conn = connection({&h});
    RunOptions o;
    o.timeout = std::chrono::seconds(20);
    auto r = run_process({"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(h.client_port), "-tls1_2",
                          "-cipher", openssl_cipher, "-CAfile", conn.cacert, "-cert", conn.cert, "-key", conn.key},
                         o);
    return r.exit_code == 0 && r.output.find("Cipher is " + openssl_cipher) != std::string::npos;
  }

  static constexpr const char* kSuites = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256";
};

// The first machine's init and the others' joins with the provider's flags: one healthy cluster of
// three whose members run with the cipher suites given (kept in each host's state for every later
// rewrite of etcd's settings), /health answering as the provider's controller wants, and a TLS 1.2
// client held to those suites. A name etcd does not know is refused before anything is written; a
// list no TLS 1.2 client could use with the members' keys, once the certificates show the key,
// before etcd's settings are written or the cluster is asked to add the member. (The provider's
// `--init-system systemd` is the process init system here; its command lines verbatim, under a
// real systemd on machines of their own: Systemd.ClusterApisCommandLines..., systemd_test.cc.)
TEST_F(ClusterApi, InitAndJoinWithTheProvidersFlagsMakeMembersItsHealthCheckAccepts) {
  ASSERT_NO_FATAL_FAILURE(init(hosts_[0], provider_flags()));
  ASSERT_NO_FATAL_FAILURE(join(hosts_[1], hosts_[0], provider_flags()));
  ASSERT_NO_FATAL_FAILURE(join(hosts_[2], hosts_[0], provider_flags()));
  for (const auto& h : hosts_) {
    SCOPED_TRACE(h.name);
    EXPECT_NE(read_file(h.conf() + "/etcd.env").find(std::string("ETCD_CIPHER_SUITES=") + kSuites), std::string::npos);
    const auto state = nlohmann::json::parse(read_file(h.conf() + "/etcdadm.json"));
    EXPECT_EQ(state["cipherSuites"].size(), 2u) << state.dump();
    const auto answer = health(h);
    ASSERT_TRUE(answer.is_object()) << answer.dump();
    EXPECT_EQ(answer["health"], "true") << answer.dump();
  }
  EXPECT_EQ(member_list(hosts_[0]).size(), 3u);
  // The members' keys are ECDSA here (key_algorithm_): of the list, the ECDSA suite is the one.
  EXPECT_TRUE(tls12_accepts(hosts_[1], "ECDHE-ECDSA-AES128-GCM-SHA256"));
  EXPECT_FALSE(tls12_accepts(hosts_[1], "ECDHE-ECDSA-AES256-GCM-SHA384")) << "not in the list";
  EXPECT_FALSE(tls12_accepts(hosts_[1], "ECDHE-ECDSA-CHACHA20-POLY1305")) << "not in the list";

  // Refused before anything is written: a misspelt name, and a list only RSA keys could use.
  ASSERT_NO_FATAL_FAILURE(add_host());
  const Host& m4 = hosts_[3];
  copy_ca(hosts_[0], m4);
  auto refused_with = [&](const std::string& suites, const std::string& why) {
    auto r = run_with_member_flags({"join", hosts_[0].client_url()}, m4, {"--cipher-suites", suites});
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
    EXPECT_FALSE(path_exists(m4.conf() + "/etcd.env")) << suites;
  };
  refused_with("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA384",
               "'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA384' is not a TLS cipher suite etcd knows");
  refused_with("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
               "none of --cipher-suites can be used with the server certificate's ecdsa-p256 key");
  EXPECT_EQ(member_list(hosts_[0]).size(), 3u) << "no learner added for it";
}

// Every name init and join accept for --cipher-suites (etcd_cipher_suite_names: Go's, as etcd
// reads them) is one this etcd accepts: etcd refuses to start on a name it does not know
// ("unexpected TLS cipher suite", even without TLS), so a member given all of them at once serves,
// and one given a made-up name does not start (the check is etcd's, not a flag it ignores). (Each
// name alone, too, on 3.4.23, 3.5.35, 3.6.16 and 3.7.3: all accepted, 2026-12-06.)
TEST_F(ClusterApi, EveryCipherSuiteNameInitAcceptsIsOneEtcdAccepts) {
  std::string all;
  for (const auto& name : etcd_cipher_suite_names()) all += (all.empty() ? "" : ",") + name;
  EtcdOptions every;
  every.extra_flags = {"--cipher-suites=" + all};
  make_dirs(dir_ / "every-name");
  EtcdMember serving(dir_ / "every-name", every);
  EXPECT_NO_THROW(serving.start());
  serving.stop();

  EtcdOptions made_up;
  made_up.extra_flags = {"--cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_MADE_UP_SUITE"};
  make_dirs(dir_ / "made-up-name");
  EtcdMember refused(dir_ / "made-up-name", made_up);
  try {
    refused.start();
    ADD_FAILURE() << "etcd started with a cipher suite name it cannot know";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("TLS_MADE_UP_SUITE"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace etcdadm::test

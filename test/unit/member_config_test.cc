// Member settings: the env file etcd reads (etcdadm's variable set, known answer), parsing env files
// written by hand, the state file round trip, and the checks on flags.
#include "etcdadm/member_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/fs.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

MemberConfig sample() {
  MemberConfig m;
  m.name = "etcd-a";
  m.version = "3.4.23";
  m.bind_address = "10.0.0.5";
  m.client_port = 2379;
  m.peer_port = 2380;
  return m;
}

TEST(MemberConfig, EnvFileKnownAnswer) {
  ClusterBootstrap b{"etcd-a=https://10.0.0.5:2380", "tok-1", false};
  EXPECT_EQ(render_env_file(member_env(sample(), b)),
            "ETCD_NAME=etcd-a\n"
            "ETCD_DATA_DIR=/var/lib/etcd\n"
            "ETCD_INITIAL_CLUSTER=etcd-a=https://10.0.0.5:2380\n"
            "ETCD_INITIAL_CLUSTER_TOKEN=tok-1\n"
            "ETCD_INITIAL_CLUSTER_STATE=new\n"
            "ETCD_INITIAL_ADVERTISE_PEER_URLS=https://10.0.0.5:2380\n"
            "ETCD_LISTEN_PEER_URLS=https://10.0.0.5:2380\n"
            "ETCD_ADVERTISE_CLIENT_URLS=https://10.0.0.5:2379\n"
            "ETCD_LISTEN_CLIENT_URLS=https://10.0.0.5:2379,https://127.0.0.1:2379\n"
            "ETCD_CLIENT_CERT_AUTH=true\n"
            "ETCD_TRUSTED_CA_FILE=/etc/etcd/pki/ca.crt\n"
            "ETCD_CERT_FILE=/etc/etcd/pki/server.crt\n"
            "ETCD_KEY_FILE=/etc/etcd/pki/server.key\n"
            "ETCD_PEER_CLIENT_CERT_AUTH=true\n"
            "ETCD_PEER_TRUSTED_CA_FILE=/etc/etcd/pki/ca.crt\n"
            "ETCD_PEER_CERT_FILE=/etc/etcd/pki/peer.crt\n"
            "ETCD_PEER_KEY_FILE=/etc/etcd/pki/peer.key\n"
            "ETCD_STRICT_RECONFIG_CHECK=true\n");
}

// Each release's own names for the corruption checks (checked against the real binaries: the
// others' names are ignored with a warning, and 3.6 refuses both at once); a version change swaps
// them, nothing else.
TEST(MemberConfig, CorruptionChecksAreNamedAsEachReleaseReadsThemAndSwappedOnAVersionChange) {
  using E = EnvVars;
  EXPECT_TRUE(corruption_check_env("3.4.23").empty()) << "3.4's initial check cannot reach its peers under TLS";
  EXPECT_EQ(corruption_check_env("3.5.4"), (E{{"ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK", "true"}}));
  EXPECT_EQ(corruption_check_env("3.5.35"), (E{{"ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK", "true"},
                                              {"ETCD_EXPERIMENTAL_COMPACT_HASH_CHECK_ENABLED", "true"}}));
  const E gates = {{"ETCD_FEATURE_GATES", "InitialCorruptCheck=true,CompactHashCheck=true"}};
  EXPECT_EQ(corruption_check_env("3.6.0"), gates);
  EXPECT_EQ(corruption_check_env("3.7.3"), gates);
  EXPECT_TRUE(corruption_check_env("3.3.27").empty());
  EXPECT_TRUE(corruption_check_env("").empty());
  EXPECT_TRUE(corruption_check_env("latest").empty());

  MemberConfig m = sample();
  m.version = "3.5.35";
  const E on_35 = member_env(m, {"etcd-a=https://10.0.0.5:2380", "t", false});
  E on_36 = with_corruption_checks(on_35, "3.6.16");
  m.version = "3.6.16";
  EXPECT_EQ(on_36, member_env(m, {"etcd-a=https://10.0.0.5:2380", "t", false}));
  EXPECT_EQ(env_value(on_36, "ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK"), "") << "3.6 refuses to start with both";
  EXPECT_EQ(with_corruption_checks(on_36, "3.5.35"), on_35) << "and back down";
  EXPECT_EQ(with_corruption_checks(on_35, "3.5.35"), on_35);
  // A restored member's first start: the check after compactions stays, the initial one goes, and
  // comes back whole.
  const E first_35 = without_initial_corruption_check(on_35);
  EXPECT_EQ(env_value(first_35, "ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK"), "");
  EXPECT_EQ(env_value(first_35, "ETCD_EXPERIMENTAL_COMPACT_HASH_CHECK_ENABLED"), "true");
  EXPECT_EQ(with_corruption_checks(first_35, "3.5.35"), on_35);
  const E first_36 = without_initial_corruption_check(on_36);
  EXPECT_EQ(env_value(first_36, "ETCD_FEATURE_GATES"), "CompactHashCheck=true");
  EXPECT_EQ(with_corruption_checks(first_36, "3.6.16"), on_36);
  m.version = "3.5.4";
  const E on_354 = member_env(m, {"etcd-a=https://10.0.0.5:2380", "t", false});
  EXPECT_EQ(without_initial_corruption_check(on_354).size(), on_354.size() - 1) << "3.5.4 has no other check";
}

TEST(MemberConfig, JoiningMemberSaysExistingAndLoopbackIsNotListedTwice) {
  MemberConfig m = sample();
  m.bind_address = "127.0.0.1";
  m.client_port = 32379;
  ClusterBootstrap b{"a=https://127.0.0.1:1,etcd-a=https://127.0.0.1:2380", "t", true};
  auto env = member_env(m, b);
  EXPECT_EQ(env_value(env, "ETCD_INITIAL_CLUSTER_STATE"), "existing");
  EXPECT_EQ(env_value(env, "ETCD_LISTEN_CLIENT_URLS"), "https://127.0.0.1:32379");
  EXPECT_EQ(env_value(env, "ETCD_NOT_THERE"), "");
}

// After a CA rotation's switch a host trusts clients by clients-ca.crt (new CA, then the retired
// one); a later init or join on that host keeps it, but never a bundle from an earlier rotation
// that does not begin with the CA the certs dir holds now (it would refuse every current client).
TEST(MemberConfig, ClientsAreTrustedByTheRotationBundleOnlyWhileItBeginsWithTheCurrentCa) {
  test::TempDir dir;
  MemberConfig m = sample();
  m.certs_dir = dir.path();
  const ClusterBootstrap b{"etcd-a=https://10.0.0.5:2380", "t", false};
  write_file_atomic(m.ca_cert(), "-----BEGIN CERTIFICATE-----\nNEW\n-----END CERTIFICATE-----\n", 0644);
  EXPECT_EQ(env_value(member_env(m, b), "ETCD_TRUSTED_CA_FILE"), m.ca_cert()) << "no bundle";
  write_file_atomic(m.clients_ca_cert(),
                    "-----BEGIN CERTIFICATE-----\nNEW\n-----END CERTIFICATE-----\n"
                    "-----BEGIN CERTIFICATE-----\nOLD\n-----END CERTIFICATE-----\n",
                    0644);
  EXPECT_EQ(env_value(member_env(m, b), "ETCD_TRUSTED_CA_FILE"), m.clients_ca_cert());
  EXPECT_EQ(env_value(member_env(m, b), "ETCD_PEER_TRUSTED_CA_FILE"), m.ca_cert()) << "peers: the current CA alone";
  write_file_atomic(m.ca_cert(), "-----BEGIN CERTIFICATE-----\nNEWER\n-----END CERTIFICATE-----\n", 0644,
                    /*overwrite=*/true);
  EXPECT_EQ(env_value(member_env(m, b), "ETCD_TRUSTED_CA_FILE"), m.ca_cert()) << "a stale bundle";
}

// --cipher-suites as Cluster API's bootstrap provider passes it: Go's names, checked against the set
// etcd accepts (a name it rejects would stop etcd at start), kept in order without repeats, and
// given to etcd as ETCD_CIPHER_SUITES; a list no TLS 1.2 client could use with the server's key.
TEST(MemberConfig, CipherSuitesAreEtcdsNamesPassedAsTheyCameAndMustFitTheServerKey) {
  EXPECT_EQ(parse_cipher_suites(""), std::vector<std::string>{});
  const auto suites = parse_cipher_suites(
      " TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
      "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305");
  EXPECT_EQ(suites, (std::vector<std::string>{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                                              "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                                              "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"}));
  for (const char* bad : {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256", "tls_aes_128_gcm_sha256"}) {
    try {
      parse_cipher_suites(std::string("TLS_AES_128_GCM_SHA256,") + bad);
      ADD_FAILURE() << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(etcd_cipher_suite_names().size(), 27u);

  MemberConfig m = sample();
  m.cipher_suites = suites;
  const auto env = member_env(m, {"etcd-a=https://10.0.0.5:2380", "t", false});
  EXPECT_EQ(env_value(env, "ETCD_CIPHER_SUITES"),
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305");
  EXPECT_EQ(env_value(member_env(sample(), {"etcd-a=https://10.0.0.5:2380", "t", false}), "ETCD_CIPHER_SUITES"), "")
      << "none given: etcd's (Go's) defaults";

  EXPECT_TRUE(cipher_suites_fit_key(suites, "rsa-2048"));
  EXPECT_TRUE(cipher_suites_fit_key(suites, "ecdsa-p256"));
  const std::vector<std::string> ecdsa_only = {"TLS_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"};
  EXPECT_FALSE(cipher_suites_fit_key(ecdsa_only, "rsa-2048")) << "TLS 1.3 names do not count";
  EXPECT_TRUE(cipher_suites_fit_key(ecdsa_only, "ec-secp384r1"));
  EXPECT_FALSE(cipher_suites_fit_key({"TLS_RSA_WITH_AES_128_GCM_SHA256"}, "ecdsa-p256"));
}

TEST(MemberConfig, Ipv6AddressesAreBracketedInUrls) {
  MemberConfig m = sample();
  m.bind_address = "fd00::5";
  EXPECT_EQ(m.client_url(), "https://[fd00::5]:2379");
  EXPECT_EQ(m.peer_url(), "https://[fd00::5]:2380");
}

TEST(MemberConfig, EtcdctlEnvUsesLoopbackAndTheEtcdctlCertificate) {
  MemberConfig newer = sample();
  newer.version = "3.6.16";
  EXPECT_EQ(env_value(etcdctl_env(newer), "ETCDCTL_API"), "");  // 3.5+ warn about it on every call
  auto env = etcdctl_env(sample());                              // 3.4.23
  EXPECT_EQ(env_value(env, "ETCDCTL_API"), "3");
  EXPECT_EQ(env_value(env, "ETCDCTL_ENDPOINTS"), "https://127.0.0.1:2379");
  EXPECT_EQ(env_value(env, "ETCDCTL_CERT"), "/etc/etcd/pki/etcdctl-etcd-client.crt");
  EXPECT_EQ(env_value(env, "ETCDCTL_KEY"), "/etc/etcd/pki/etcdctl-etcd-client.key");
}

TEST(MemberConfig, WrapperGoesToInstallDirOnlyForTheDefaultConfigDir) {
  MemberConfig m = sample();
  EXPECT_EQ(m.etcdctl_wrapper(), "/opt/bin/etcdctl.sh");  // etcdadm's place
  m.config_dir = "/etc/etcd-b";
  EXPECT_EQ(m.etcdctl_wrapper(), "/etc/etcd-b/etcdctl.sh");  // a second member on the host
}

TEST(MemberConfig, ParsesHandWrittenEnvFiles) {
  auto vars = parse_env_file(
      "# comment\n"
      "\n"
      "ETCD_NAME=a\n"
      "  export ETCD_DATA_DIR=\"/var/lib/etcd\"  \r\n"
      "ETCD_INITIAL_CLUSTER=a=https://h:2380,b=https://g:2380\n"
      "not a variable\n"
      "=nothing\n"
      "ETCD_EMPTY=");
  ASSERT_EQ(vars.size(), 4u);
  EXPECT_EQ(env_value(vars, "ETCD_NAME"), "a");
  EXPECT_EQ(env_value(vars, "ETCD_DATA_DIR"), "/var/lib/etcd");
  EXPECT_EQ(env_value(vars, "ETCD_INITIAL_CLUSTER"), "a=https://h:2380,b=https://g:2380");
  EXPECT_EQ(vars[3].first, "ETCD_EMPTY");
  EXPECT_EQ(vars[3].second, "");
  // What we render, we read back.
  auto env = member_env(sample(), {"etcd-a=https://10.0.0.5:2380", "tok", false});
  EXPECT_EQ(parse_env_file(render_env_file(env)), env);
}

TEST(MemberConfig, EnvFileRefusesWhatWouldAddLinesOfItsOwn) {
  // A member name reported by the cluster being joined ends up in ETCD_INITIAL_CLUSTER.
  EXPECT_THROW(render_env_file({{"ETCD_INITIAL_CLUSTER", "m1=http://a:2380\nETCD_UNSAFE_NO_FSYNC=true"}}), Error);
  EXPECT_THROW(render_env_file({{"ETCD_NAME", "m1\r"}}), Error);
  EXPECT_THROW(render_env_file({{"ETCD_NAME", std::string("m1\0x", 4)}}), Error);
  EXPECT_THROW(render_env_file({{"ETCD NAME", "m1"}}), Error);
  EXPECT_THROW(render_env_file({{"1ETCD", "m1"}}), Error);
  EXPECT_THROW(render_env_file({{"", "m1"}}), Error);
  EXPECT_EQ(render_env_file({{"ETCD_NAME", "m 1=\"x\""}}), "ETCD_NAME=m 1=\"x\"\n");
}

TEST(MemberConfig, StateFileRoundTripsAndIsPrivate) {
  test::TempDir dir;
  MemberConfig m = sample();
  m.config_dir = dir / "conf";
  m.init_system = InitSystemKind::kProcess;
  m.server_cert_extra_sans = {"etcd.example.com"};
  m.cluster_endpoints = {"https://10.0.0.5:2379", "https://10.0.0.6:2379"};
  m.disk_priorities = false;
  m.cipher_suites = {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"};
  save_member_state(m);
  struct stat st {};
  ASSERT_EQ(::stat(m.state_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  MemberConfig back;
  ASSERT_TRUE(load_member_state(m.config_dir, back));
  EXPECT_EQ(back.name, m.name);
  EXPECT_EQ(back.bind_address, m.bind_address);
  EXPECT_EQ(back.init_system, InitSystemKind::kProcess);
  EXPECT_EQ(back.server_cert_extra_sans, m.server_cert_extra_sans);
  EXPECT_EQ(back.cluster_endpoints, m.cluster_endpoints);
  EXPECT_FALSE(back.disk_priorities);
  EXPECT_EQ(back.cipher_suites, m.cipher_suites);
  EXPECT_FALSE(load_member_state(dir / "nothing", back));
  make_dirs(dir / "broken");
  write_file_atomic(dir / "broken/etcdadm.json", "{not json", 0600);
  try {
    load_member_state(dir / "broken", back);
    FAIL() << "a broken state file must be reported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
  }
}

TEST(MemberConfig, CompleteFillsDefaultsAndRejectsBadFlags) {
  MemberConfig m;
  m.complete();
  EXPECT_FALSE(m.name.empty());
  EXPECT_FALSE(m.bind_address.empty());
  auto rejects = [](auto mutate) {
    MemberConfig c = sample();
    mutate(c);
    try {
      c.complete();
      return false;
    } catch (const Error& e) {
      return e.kind() == ErrorKind::kInvalidArgument;
    }
  };
  EXPECT_TRUE(rejects([](MemberConfig& c) { c.name = "a b"; }));
  EXPECT_TRUE(rejects([](MemberConfig& c) { c.client_port = 0; }));
  EXPECT_TRUE(rejects([](MemberConfig& c) { c.peer_port = c.client_port; }));
  EXPECT_TRUE(rejects([](MemberConfig& c) { c.data_dir = "relative/dir"; }));
  EXPECT_TRUE(rejects([](MemberConfig& c) { c.service_name = "a/b"; }));
  EXPECT_THROW(parse_init_system("upstart"), Error);
  EXPECT_EQ(parse_init_system("kubelet"), InitSystemKind::kKubelet);
}

}  // namespace
}  // namespace etcdadm

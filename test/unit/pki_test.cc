// The member PKI, checked with the openssl CLI as an independent oracle: chains verify, SANs and
// key usages are what etcd needs, keys are 0600, the CA is reused, renewal keeps keys and SANs.
#include "etcdadm/pki.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

std::string openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_process(argv);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

MemberPkiSpec spec(const std::string& dir) {
  MemberPkiSpec s;
  s.certs_dir = dir;
  s.name = "m1";
  s.client_hosts = {"10.0.0.1", "etcd-1.example.com"};
  s.peer_hosts = {"10.0.0.1"};
  s.extra_sans = {"etcd.example.com"};
  return s;
}

// An ECDSA CA (init --key-algorithm ecdsa-p256) gets ECDSA leaves without being told (join follows
// the cluster's CA); their key usage has no keyEncipherment (RSA key transport), which the openssl
// oracle shows, and an explicit algorithm overrides the CA's.
TEST(Pki, AnEcdsaCaGivesEcdsaLeavesThatSignOnly) {
  test::TempDir dir;
  EXPECT_TRUE(ensure_ca(dir.path(), KeyAlgorithm::kEcdsaP256));
  EXPECT_EQ(ensure_member_certs(spec(dir.path())), member_cert_names());
  for (const auto& c : inspect_certs(dir.path())) EXPECT_EQ(c.key_algorithm, "ecdsa-p256") << c.name;
  std::string text = openssl({"x509", "-in", dir / "peer.crt", "-noout", "-text"});
  EXPECT_NE(text.find("id-ecPublicKey"), std::string::npos) << text;
  EXPECT_NE(text.find("NIST CURVE: P-256"), std::string::npos) << text;
  EXPECT_NE(text.find("Digital Signature"), std::string::npos) << text;
  EXPECT_EQ(text.find("Key Encipherment"), std::string::npos) << text;
  EXPECT_NE(openssl({"verify", "-CAfile", dir / "ca.crt", dir / "peer.crt"}).find(": OK"), std::string::npos);

  test::TempDir mixed;
  ensure_ca(mixed.path(), KeyAlgorithm::kEcdsaP256);
  MemberPkiSpec s = spec(mixed.path());
  s.key_algorithm = KeyAlgorithm::kRsa2048;
  ensure_member_certs(s);
  EXPECT_EQ(key_algorithm_of_cert(mixed / "server.crt"), "rsa-2048");
  EXPECT_NE(openssl({"x509", "-in", mixed / "server.crt", "-noout", "-text"}).find("Key Encipherment"),
            std::string::npos);
  EXPECT_NE(openssl({"verify", "-CAfile", mixed / "ca.crt", mixed / "server.crt"}).find(": OK"), std::string::npos);
}

TEST(Pki, KeyAlgorithmNamesParseAndOthersAreRefused) {
  EXPECT_EQ(parse_key_algorithm("rsa-2048"), KeyAlgorithm::kRsa2048);
  EXPECT_EQ(parse_key_algorithm("ECDSA-P256"), KeyAlgorithm::kEcdsaP256);  // kubeadm's spelling
  EXPECT_EQ(key_algorithm_name(KeyAlgorithm::kEcdsaP256), "ecdsa-p256");
  try {
    parse_key_algorithm("rsa-1024");
    FAIL() << "rsa-1024 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("rsa-1024"), std::string::npos) << e.what();
  }
}

TEST(Pki, InitIssuesAVerifiableMemberPki) {
  test::TempDir dir;
  EXPECT_TRUE(ensure_ca(dir.path()));
  auto issued = ensure_member_certs(spec(dir.path()));
  EXPECT_EQ(issued, member_cert_names());
  for (const auto& stem : member_cert_names()) {
    std::string crt = dir / (stem + ".crt");
    EXPECT_NE(openssl({"verify", "-CAfile", dir / "ca.crt", crt}).find(": OK"), std::string::npos) << stem;
    struct stat st {};
    ASSERT_EQ(::stat((dir / (stem + ".key")).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << stem;
  }
  std::string server = openssl({"x509", "-in", dir / "server.crt", "-noout", "-text"});
  for (const char* want :
       {"DNS:m1", "IP Address:127.0.0.1", "IP Address:10.0.0.1", "DNS:etcd-1.example.com", "DNS:etcd.example.com",
        "TLS Web Server Authentication", "TLS Web Client Authentication", "Subject: CN = m1"}) {
    EXPECT_NE(server.find(want), std::string::npos) << want << "\n" << server;
  }
  std::string client =
      openssl({"x509", "-in", dir / "etcdctl-etcd-client.crt", "-noout", "-subject", "-ext", "extendedKeyUsage"});
  EXPECT_NE(client.find("O = system:masters, CN = m1-etcdctl"), std::string::npos) << client;
  EXPECT_EQ(client.find("Server Authentication"), std::string::npos) << client;
  auto info = inspect_certs(dir.path());
  ASSERT_EQ(info.size(), 5u);
  EXPECT_TRUE(info[0].is_ca);
  for (const auto& c : info) EXPECT_EQ(c.key_algorithm, "rsa-2048") << c.name;  // the default
  EXPECT_GT(info[0].not_after - std::chrono::system_clock::now(), std::chrono::hours(24 * 365 * 9));
  EXPECT_LT(info[1].not_after - std::chrono::system_clock::now(), std::chrono::hours(24 * 366));
}

TEST(Pki, ExistingCaIsReusedAndCheckedAndCertsAreNotOverwritten) {
  test::TempDir dir;
  ensure_ca(dir.path());
  std::string ca = read_file(dir / "ca.crt");
  EXPECT_FALSE(ensure_ca(dir.path()));
  EXPECT_EQ(read_file(dir / "ca.crt"), ca);
  ensure_member_certs(spec(dir.path()));
  std::string server = read_file(dir / "server.crt");
  EXPECT_TRUE(ensure_member_certs(spec(dir.path())).empty());
  EXPECT_EQ(read_file(dir / "server.crt"), server);
  // A CA key that does not match is refused, not silently replaced.
  test::TempDir other;
  ensure_ca(other.path());
  write_file_atomic(dir / "ca.key", read_file(other / "ca.key"), 0600);
  EXPECT_THROW(ensure_ca(dir.path()), Error);
  // Half a CA (certificate without key: the usual mistake when joining) is named.
  test::TempDir half;
  write_file_atomic(half / "ca.crt", ca);
  try {
    ensure_ca(half.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only one of ca.crt and ca.key"), std::string::npos);
  }
}

TEST(Pki, KeptCertificatesMustComeFromTheCaAndCoverTheHosts) {
  test::TempDir dir;
  ensure_ca(dir.path());
  ensure_member_certs(spec(dir.path()));
  EXPECT_TRUE(ensure_member_certs(spec(dir.path())).empty());  // all fit: kept

  MemberPkiSpec moved = spec(dir.path());
  moved.client_hosts = {"10.0.0.9"};  // another --bind-address since the certificates were made
  try {
    ensure_member_certs(moved);
    FAIL() << "a certificate without the new address must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("server.crt is not valid for 10.0.0.9"), std::string::npos) << e.what();
  }

  // Another cluster's CA in place of the one that issued them (a retried join with the right CA).
  remove_all(dir / "ca.crt");
  remove_all(dir / "ca.key");
  ensure_ca(dir.path());
  try {
    ensure_member_certs(spec(dir.path()));
    FAIL() << "certificates from another CA must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTls);
    EXPECT_NE(std::string(e.what()).find("was not issued by the CA"), std::string::npos) << e.what();
  }
}

TEST(Pki, RenewKeepsKeysSubjectsAndSansButChangesSerialAndExpiry) {
  test::TempDir dir;
  ensure_ca(dir.path());
  MemberPkiSpec s = spec(dir.path());
  s.leaf_validity = std::chrono::hours(24);  // about to expire
  ensure_member_certs(s);
  auto before = inspect_certs(dir.path());
  std::string pub_before = openssl({"x509", "-in", dir / "server.crt", "-noout", "-pubkey"});
  auto renewed = renew_certs(dir.path(), {"all"});
  EXPECT_EQ(renewed, member_cert_names());
  auto after = inspect_certs(dir.path());
  for (size_t i = 1; i < after.size(); ++i) {
    EXPECT_NE(after[i].serial_hex, before[i].serial_hex) << after[i].name;
    EXPECT_GT(after[i].not_after - before[i].not_after, std::chrono::hours(24 * 300)) << after[i].name;
    EXPECT_EQ(after[i].subject, before[i].subject);
    EXPECT_EQ(after[i].sans, before[i].sans);
  }
  EXPECT_EQ(after[0].serial_hex, before[0].serial_hex) << "the CA is not renewed";
  EXPECT_EQ(openssl({"x509", "-in", dir / "server.crt", "-noout", "-pubkey"}), pub_before);
  EXPECT_NE(openssl({"verify", "-CAfile", dir / "ca.crt", dir / "server.crt"}).find(": OK"), std::string::npos);
  EXPECT_EQ(renew_certs(dir.path(), {"peer"}), std::vector<std::string>{"peer"});
  EXPECT_THROW(renew_certs(dir.path(), {"bogus"}), Error);
}

// openssl verify's verdict (no EXPECT: a refusal is an answer here).
bool openssl_verifies(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"openssl", "verify"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_process(argv);
  return r.exit_code == 0 && r.output.find(": OK") != std::string::npos;
}

// A CA rotation's certificates, with openssl as the oracle: the re-issued leaves verify against the
// new CA alone, and against the old CA alone only through the cross certificate their files carry;
// after the switch, ca.crt is the new CA, the old pair is kept, a renewal keeps the cross
// certificate, and kept leaves pass init's check before and after.
TEST(Pki, ARotationsLeavesVerifyWithTheNewCaAndThroughTheCrossCertificateWithTheOld) {
  test::TempDir dir;
  ensure_ca(dir.path());
  ensure_member_certs(spec(dir.path()));
  const std::string old_ca = read_file(dir / "ca.crt"), old_key = read_file(dir / "ca.key");
  const RotationCa r = make_rotation_ca(dir.path());
  EXPECT_NO_THROW(check_rotation_ca(dir / "ca.crt", r));
  write_file_atomic(dir / "new-ca.crt", r.cert_pem);
  write_file_atomic(dir / "cross.crt", r.cross_pem);
  EXPECT_EQ(reissue_under_rotation_ca(dir.path(), r), member_cert_names());
  EXPECT_EQ(read_file(dir / "ca.crt"), old_ca) << "the CA switches later";
  for (const auto& stem : member_cert_names()) {
    write_file_atomic(dir / "leaf.crt", read_file(dir / (stem + ".crt")).substr(0, read_file(dir / (stem + ".crt")).find("-----END CERTIFICATE-----") + 26));
    EXPECT_TRUE(openssl_verifies({"-CAfile", dir / "new-ca.crt", dir / "leaf.crt"})) << stem;
    EXPECT_TRUE(openssl_verifies({"-CAfile", dir / "ca.crt", "-untrusted", dir / "cross.crt", dir / "leaf.crt"})) << stem;
    EXPECT_FALSE(openssl_verifies({"-CAfile", dir / "ca.crt", dir / "leaf.crt"})) << stem << ": not without the cross certificate";
  }
  EXPECT_NE(read_file(dir / "server.crt").find(r.cross_pem), std::string::npos) << "served with the cross certificate";
  EXPECT_NO_THROW(ensure_member_certs(spec(dir.path()))) << "kept leaves of the new CA pass before the switch";

  adopt_rotation_ca(dir.path(), r, "20261202T100000Z");
  EXPECT_EQ(read_file(dir / "ca.crt"), r.cert_pem);
  EXPECT_EQ(read_file(dir / "ca.key"), r.key_pem);
  EXPECT_EQ(read_file(dir / "ca.retired-20261202T100000Z.crt"), old_ca);
  EXPECT_EQ(read_file(dir / "ca.retired-20261202T100000Z.key"), old_key);
  adopt_rotation_ca(dir.path(), r, "20261202T100000Z");  // again: nothing changes
  EXPECT_EQ(read_file(dir / "ca.retired-20261202T100000Z.crt"), old_ca);
  EXPECT_NO_THROW(ensure_member_certs(spec(dir.path()))) << "and after it";
  EXPECT_TRUE(ensure_ca(dir.path()) == false) << "ca.crt and ca.key are a pair";
  renew_certs(dir.path(), {"server"});
  EXPECT_NE(read_file(dir / "server.crt").find(r.cross_pem), std::string::npos) << "a renewal keeps the cross certificate";
  EXPECT_TRUE(openssl_verifies({"-CAfile", dir / "ca.retired-20261202T100000Z.crt", "-untrusted", dir / "server.crt", dir / "server.crt"}));
}

TEST(Pki, ARotationCaThatDoesNotFitIsRefused) {
  test::TempDir dir, other;
  ensure_ca(dir.path());
  ensure_ca(other.path());
  const RotationCa good = make_rotation_ca(dir.path());
  const RotationCa foreign = make_rotation_ca(other.path());
  auto refused = [&](const RotationCa& r, const std::string& why) {
    try {
      check_rotation_ca(dir / "ca.crt", r);
      ADD_FAILURE() << "accepted: " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(RotationCa{good.cert_pem, foreign.key_pem, good.cross_pem}, "its key does not belong to its certificate");
  refused(RotationCa{foreign.cert_pem, foreign.key_pem, foreign.cross_pem}, "was not issued by");
  refused(RotationCa{good.cert_pem, good.key_pem, foreign.cross_pem}, "not for the new CA's subject and key");
  refused(RotationCa{good.cert_pem, good.key_pem, "garbage"}, "not a PEM certificate");
}

// Sealed for the holders of a CA key: opens with that key and context only; any change is kAuth.
TEST(Pki, SealedTextOpensOnlyWithItsCaKeyAndContext) {
  test::TempDir dir, other;
  ensure_ca(dir.path());
  ensure_ca(other.path());
  const std::string sealed = seal_for_ca_holders(dir / "ca.key", "ctx", "the new CA's key");
  EXPECT_EQ(sealed.size(), 12 + 16 + std::string("the new CA's key").size());
  EXPECT_EQ(open_sealed(dir / "ca.key", "ctx", sealed), "the new CA's key");
  EXPECT_NE(seal_for_ca_holders(dir / "ca.key", "ctx", "the new CA's key"), sealed) << "a fresh nonce each time";
  auto auth_error = [&](const std::string& key, const std::string& ctx, const std::string& text) {
    try {
      open_sealed(key, ctx, text);
      return false;
    } catch (const Error& e) {
      return e.kind() == ErrorKind::kAuth;
    }
  };
  EXPECT_TRUE(auth_error(other / "ca.key", "ctx", sealed)) << "another CA";
  EXPECT_TRUE(auth_error(dir / "ca.key", "ctx2", sealed)) << "another context";
  for (size_t i : {size_t{0}, size_t{13}, sealed.size() - 1}) {
    std::string forged = sealed;
    forged[i] ^= 1;
    EXPECT_TRUE(auth_error(dir / "ca.key", "ctx", forged)) << "byte " << i;
  }
  EXPECT_TRUE(auth_error(dir / "ca.key", "ctx", sealed.substr(0, 20))) << "too short";
}

}  // namespace
}  // namespace etcdadm

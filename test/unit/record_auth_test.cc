// Record authentication (controller/record_auth.h): the authenticator recomputed by the openssl
// command line from the CA key's DER (an outside oracle for the key derivation, the canonical
// form and the MAC), and each way a record can fail to be authentic.
#include "controller/record_auth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "etcdadm/pki.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

std::string openssl(const std::string& script) {
  auto r = run_process({"sh", "-c", script});
  EXPECT_EQ(r.exit_code, 0) << script << "\n" << r.output;
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  out.erase(std::remove(out.begin(), out.end(), ':'), out.end());
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// HMAC-SHA-256(HKDF-SHA-256(DER of the key, "etcdadm-ca-auth/1", "etcdadm-auto records"), message)
// by the openssl command line; `der_command` prints the key's DER.
std::string oracle_hmac(const std::string& der_command, const std::string& message_file) {
  const std::string ikm = openssl(der_command + " | od -An -v -tx1 | tr -d ' \\n'");
  const std::string key = openssl("openssl kdf -keylen 32 -kdfopt digest:SHA256 -kdfopt hexkey:" + ikm +
                                  " -kdfopt salt:etcdadm-ca-auth/1 -kdfopt 'info:etcdadm-auto records' HKDF");
  return openssl("openssl mac -digest SHA256 -macopt hexkey:" + key + " HMAC < '" + message_file + "'");
}

TEST(RecordAuth, TheAuthenticatorIsWhatTheProtocolSaysByTheOpensslCommandLine) {
  for (auto algorithm : {KeyAlgorithm::kEcdsaP256, KeyAlgorithm::kRsa2048}) {
    test::TempDir dir;
    ensure_ca(dir.path(), algorithm);
    const auto ring = RecordKeyring::of_certs_dir(dir.path());
    ASSERT_TRUE(ring.can_sign());
    // Members out of order, whitespace, a nested object, UTF-8 and a quote: the canonical form
    // sorts, drops the whitespace and keeps the bytes.
    const std::string record = "{ \"zeta\": 1,\n \"alpha\": {\"b\": \"h\\u00e9 \\\"q\\\"\", \"a\": [2, 1]},"
                               " \"sequence\": 18446744073709551615 }";
    const std::string canonical = "{\"alpha\":{\"a\":[2,1],\"b\":\"h\xc3\xa9 \\\"q\\\"\"},"
                                  "\"sequence\":18446744073709551615,\"zeta\":1}";
    const std::string key = "etcdadm-auto/hosts/m1.json";
    write_file_atomic(dir / "message", "etcdadm-auto-record/1\n" + key + "\n" + canonical);
    const std::string der = algorithm == KeyAlgorithm::kEcdsaP256
                                ? "openssl ec -in '" + (dir / "ca.key") + "' -outform DER 2>/dev/null"
                                : "openssl rsa -in '" + (dir / "ca.key") + "' -outform DER -traditional 2>/dev/null";
    const std::string expected = oracle_hmac(der, dir / "message");
    ASSERT_EQ(expected.size(), 64u);

    const std::string signed_text = ring.sign(key, record);
    const auto j = nlohmann::json::parse(signed_text);
    EXPECT_EQ(j["auth"]["v"], 1);
    EXPECT_EQ(j["auth"]["hmac"], expected);
    EXPECT_EQ(j["zeta"], 1) << "the record itself is kept";
    EXPECT_EQ(ring.check(key, signed_text), RecordTrust::kAuthentic);
    // Re-serialized any way (compact, other order), it stays authentic: the MAC is over the value.
    EXPECT_EQ(ring.check(key, j.dump()), RecordTrust::kAuthentic);
  }
}

// The short tag of a change log segment's name: the first 16 bytes of the same HMAC over the
// message as given.
TEST(RecordAuth, ASegmentTagIsTheHmacsFirstSixteenBytesByTheOpensslCommandLine) {
  test::TempDir dir, other;
  ensure_ca(dir.path());
  ensure_ca(other.path());
  const auto ring = RecordKeyring::of_certs_dir(dir.path());
  const std::string message = "etcdadm-changelog-segment/1\ncdf818194e3a8c32\n1001\n1500\n1795242990123\n" +
                              std::string(64, 'a') + "\n";
  write_file_atomic(dir / "message", message);
  const std::string full =
      oracle_hmac("openssl ec -in '" + (dir / "ca.key") + "' -outform DER 2>/dev/null", dir / "message");
  const std::string tag = ring.tag(message);
  EXPECT_EQ(tag, full.substr(0, 32));
  EXPECT_EQ(ring.check_tag(message, tag), RecordTrust::kAuthentic);
  EXPECT_EQ(ring.check_tag(message, ""), RecordTrust::kUnsigned);
  EXPECT_EQ(ring.check_tag(message + "x", tag), RecordTrust::kForged) << "another name";
  EXPECT_EQ(ring.check_tag(message, RecordKeyring::of_certs_dir(other.path()).tag(message)), RecordTrust::kForged)
      << "another cluster's CA";
  EXPECT_EQ(ring.check_tag(message, full), RecordTrust::kForged) << "the whole HMAC is not the tag";
  EXPECT_THROW(RecordKeyring().tag(message), Error);
}

TEST(RecordAuth, EveryWayARecordIsNotAuthentic) {
  test::TempDir dir, other;
  ensure_ca(dir.path());
  ensure_ca(other.path());
  const auto ring = RecordKeyring::of_certs_dir(dir.path());
  const auto stranger = RecordKeyring::of_certs_dir(other.path());
  const std::string key = "etcdadm-auto/plan.json";
  const std::string record = R"({"format":"etcdadm-auto-plan/1","sequence":2,"purpose":"restore"})";
  const std::string good = ring.sign(key, record);

  EXPECT_EQ(ring.check(key, record), RecordTrust::kUnsigned);
  auto altered = nlohmann::json::parse(good);
  altered["sequence"] = 3;
  EXPECT_EQ(ring.check(key, altered.dump()), RecordTrust::kForged) << "a field changed";
  auto added = nlohmann::json::parse(good);
  added["backup"] = "theirs";
  EXPECT_EQ(ring.check(key, added.dump()), RecordTrust::kForged) << "a field added";
  EXPECT_EQ(ring.check("etcdadm-auto/version-turn.json", good), RecordTrust::kForged) << "moved to another key";
  EXPECT_EQ(ring.check(key, stranger.sign(key, record)), RecordTrust::kForged) << "another cluster's CA";
  for (const char* auth : {R"("x")", R"({"v":2,"hmac":"00"})", R"({"v":1})", R"({"v":1,"hmac":7})"}) {
    auto j = nlohmann::json::parse(record);
    j["auth"] = nlohmann::json::parse(auth);
    EXPECT_EQ(ring.check(key, j.dump()), RecordTrust::kForged) << auth;
  }
  EXPECT_THROW(ring.check(key, "[1]"), Error);
  EXPECT_THROW(ring.check(key, "{not json"), Error);
  EXPECT_EQ(RecordKeyring().check(key, good), RecordTrust::kForged) << "a keyring without keys verifies nothing";
  EXPECT_THROW(RecordKeyring().sign(key, record), Error);
  EXPECT_FALSE(RecordKeyring::of_certs_dir(dir / "none").can_sign());
}

// A CA rotation: the switched host holds the old key as ca.retired-<id>.key, a host that has not
// switched yet takes the new key from the rotation record; each verifies the other's records.
TEST(RecordAuth, BothSidesOfACaRotationVerifyEachOther) {
  test::TempDir old_side, new_side;
  ensure_ca(old_side.path());
  ensure_ca(new_side.path());
  write_file_atomic(new_side / "ca.retired-20261205T000000Z.key", read_file(old_side / "ca.key"), 0600);
  const auto switched = RecordKeyring::of_certs_dir(new_side.path());
  auto not_yet = RecordKeyring::of_certs_dir(old_side.path());
  const std::string key = "etcdadm-auto/hosts/m2.json";
  const std::string record = R"({"name":"m2"})";
  EXPECT_EQ(switched.check(key, not_yet.sign(key, record)), RecordTrust::kAuthentic);
  EXPECT_EQ(not_yet.check(key, switched.sign(key, record)), RecordTrust::kForged);
  not_yet.accept_key(read_file(new_side / "ca.key"));
  EXPECT_EQ(not_yet.check(key, switched.sign(key, record)), RecordTrust::kAuthentic);
}

TEST(RecordAuth, ThePolicyTakesUnsignedRecordsOnlyWhenTold) {
  test::TempDir dir;
  ensure_ca(dir.path());
  const auto ring = RecordKeyring::of_certs_dir(dir.path());
  const std::string key = "etcdadm-auto/spec.json";
  const std::string record = R"({"format":"etcdadm-auto-spec/1"})";
  RecordPolicy strict{&ring, false}, lenient{&ring, true};
  EXPECT_EQ(strict.refusal(key, ring.sign(key, record)), "");
  EXPECT_NE(strict.refusal(key, record).find("carries no authenticator"), std::string::npos);
  EXPECT_EQ(lenient.refusal(key, record), "");
  auto forged = nlohmann::json::parse(ring.sign(key, record));
  forged["autoRestore"] = true;
  for (const auto& policy : {strict, lenient}) {
    const std::string why = policy.refusal(key, forged.dump());
    EXPECT_NE(why.find("none of this host's CA keys verifies"), std::string::npos) << why;
    EXPECT_NE(why.find(key), std::string::npos) << why;
    EXPECT_THROW(policy.require(key, forged.dump()), Error);
  }
}

}  // namespace
}  // namespace etcdadm

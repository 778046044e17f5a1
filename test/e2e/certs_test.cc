// etcd serving with the PKI etcdadm generates, `certs check-expiration`, and `certs renew` followed
// by a member restart: the member keeps serving TLS with client-certificate auth.
#include <gtest/gtest.h>

#include "etcdadm/pki.h"
#include "test/support/cli_fixture.h"

namespace etcdadm::test {
namespace {

class Certs : public CliTest {};

TEST_F(Certs, EtcdServesWithOurPkiAndKeepsServingAfterRenewal) {
  std::string pki = dir_ / "pki";
  ensure_ca(pki);
  MemberPkiSpec spec;
  spec.certs_dir = pki;
  spec.name = "m1";
  ensure_member_certs(spec);
  TlsFiles tls;
  tls.ca_cert = pki + "/ca.crt";
  tls.ca_key = pki + "/ca.key";
  tls.server_cert = pki + "/server.crt";
  tls.server_key = pki + "/server.key";
  tls.client_cert = pki + "/etcdctl-etcd-client.crt";
  tls.client_key = pki + "/etcdctl-etcd-client.key";
  EtcdOptions o;
  o.tls = true;
  o.tls_files = &tls;
  auto& m = start_member(o);
  EtcdClient client(m.connection());
  client.put("/k", "v");

  auto before = cli_json({"certs", "check-expiration", "--certs-dir", pki, "-o", "json"});
  ASSERT_EQ(before.size(), 5u);
  EXPECT_EQ(before[0]["name"], "ca");
  auto table = cli({"certs", "check-expiration", "--certs-dir", pki});
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.output.find("etcdctl-etcd-client"), std::string::npos) << table.output;

  auto r = cli({"certs", "renew", "all", "--certs-dir", pki});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("renewed " + pki + "/server.crt"), std::string::npos) << r.output;
  auto after = cli_json({"certs", "check-expiration", "--certs-dir", pki, "-o", "json"});
  EXPECT_NE(after[1]["serial"], before[1]["serial"]);
  m.stop();
  m.start();  // etcd reads certificates at start
  EtcdClient again(m.connection());
  EXPECT_EQ(all_keys(again).size(), 1u);

  auto missing = cli({"certs", "check-expiration", "--certs-dir", dir_ / "nothing-here"});
  EXPECT_EQ(missing.exit_code, 3) << missing.output;
}

}  // namespace
}  // namespace etcdadm::test

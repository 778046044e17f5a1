#include <gtest/gtest.h>

#include <cstdlib>

#include "common/error.h"
#include "etcd/client_pool.h"
#include "etcd/connection.h"
#include "etcd/grpc_errors.h"

namespace etcdadm {

TEST(Endpoint, SchemesAndDefaults) {
  auto a = parse_endpoint("https://10.0.0.1:2379", false);
  EXPECT_TRUE(a.tls);
  EXPECT_EQ(a.target, "10.0.0.1:2379");
  auto b = parse_endpoint("http://etcd-0:2379/", true);
  EXPECT_FALSE(b.tls);
  EXPECT_EQ(b.target, "etcd-0:2379");
  EXPECT_TRUE(parse_endpoint("127.0.0.1:2379", true).tls);  // etcdctl: TLS files imply TLS
  EXPECT_FALSE(parse_endpoint("127.0.0.1:2379", false).tls);
  EXPECT_EQ(parse_endpoint("etcd-0", false).target, "etcd-0:2379");
  EXPECT_EQ(parse_endpoint("[::1]:2379", false).target, "[::1]:2379");
  // A unix socket by absolute path, as etcdctl takes it, in gRPC's form; always plaintext.
  auto u = parse_endpoint("unix:///run/etcd/client:2379", true);
  EXPECT_FALSE(u.tls);
  EXPECT_EQ(u.target, "unix:///run/etcd/client:2379");
  EXPECT_THROW(parse_endpoint("unix://relative.sock", false), Error);
  EXPECT_THROW(parse_endpoint("unix://", false), Error);
  EXPECT_THROW(parse_endpoint("unix:///" + std::string(120, 'a'), false), Error);
  EXPECT_THROW(parse_endpoint("unixs:///run/etcd.sock", false), Error);
  EXPECT_THROW(parse_endpoint("http://a/b", false), Error);
}

TEST(Endpoint, SplitList) {
  auto v = split_endpoints("a:1, b:2,,c:3 ");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[1], "b:2");
}

TEST(ConnectionConfig, EnvAndUserPassword) {
  ::setenv("ETCDCTL_ENDPOINTS", "x:1,y:2", 1);
  ::setenv("ETCDCTL_DIAL_TIMEOUT", "3s", 1);
  ConnectionConfig c;
  apply_etcdctl_env(c);
  ::unsetenv("ETCDCTL_ENDPOINTS");
  ::unsetenv("ETCDCTL_DIAL_TIMEOUT");
  EXPECT_EQ(c.endpoints.size(), 2u);
  EXPECT_EQ(c.dial_timeout.count(), 3000);
  c.user = "root:s3cret:with:colons";
  c.normalise_user();
  EXPECT_EQ(c.user, "root");
  EXPECT_EQ(c.password, "s3cret:with:colons");
  ConnectionConfig bad;
  bad.cert = "/nonexistent";
  EXPECT_THROW(bad.validate(), Error);
  ConnectionConfig nopw;
  nopw.user = "root";
  EXPECT_THROW(nopw.validate(), Error);
}

}  // namespace etcdadm

namespace etcdadm {
namespace {

// etcd's own error strings (api/v3rpc/rpctypes/error.go, the same in 3.4-3.7), as gRPC carries
// them, and as a member lists them in StatusResponse.errors.
TEST(EtcdRefusal, EtcdsErrorStringsAreNamedAndOthersAreNot) {
  EXPECT_EQ(etcd_refusal("etcdserver: no leader"), EtcdRefusal::kNoLeader);
  EXPECT_EQ(etcd_refusal("etcdserver: leader changed"), EtcdRefusal::kLeaderChanged);
  EXPECT_EQ(etcd_refusal("etcdserver: invalid auth token"), EtcdRefusal::kInvalidAuthToken);
  EXPECT_EQ(etcd_refusal("etcdserver: user name is empty"), EtcdRefusal::kUserNameEmpty);
  EXPECT_EQ(etcd_refusal("etcdserver: permission denied"), EtcdRefusal::kPermissionDenied);
  EXPECT_EQ(etcd_refusal("etcdserver: mvcc: required revision has been compacted"), EtcdRefusal::kNone);
  EXPECT_EQ(etcd_refusal("failed to connect to all addresses"), EtcdRefusal::kNone);
  EXPECT_EQ(etcd_refusal(""), EtcdRefusal::kNone);
}

TEST(EtcdRefusal, ErrorsFromGrpcSayWhatTheRefusalMeans) {
  CallSite site{"Status", "https://10.0.0.1:2379", true, true, true};
  Error no_leader = error_from_grpc(grpc::Status(grpc::StatusCode::UNAVAILABLE, "etcdserver: no leader"), site);
  EXPECT_EQ(no_leader.kind(), ErrorKind::kUnavailable);
  EXPECT_NE(std::string(no_leader.what()).find("etcd has no leader"), std::string::npos) << no_leader.what();
  Error denied = error_from_grpc(grpc::Status(grpc::StatusCode::UNKNOWN, "etcdserver: permission denied"), site);
  EXPECT_EQ(denied.kind(), ErrorKind::kAuth);
  Error no_user = error_from_grpc(grpc::Status(grpc::StatusCode::UNKNOWN, "etcdserver: user name is empty"), site);
  EXPECT_EQ(no_user.kind(), ErrorKind::kAuth);
  EXPECT_NE(no_user.hint().find("--user"), std::string::npos) << no_user.hint();
}

}  // namespace
}  // namespace etcdadm

namespace etcdadm {
namespace {

// The controller's pool: one client per endpoint, kept while asked for, dropped after a round
// that did not ask (no connection is made here: a client connects on its first call).
TEST(EtcdClientPool, KeepsOneClientPerEndpointWhileItIsAskedFor) {
  ConnectionConfig base;
  base.endpoints = {"https://ignored:1"};
  EtcdClientPool pool(base);
  EtcdClient& a = pool.client("https://10.0.0.1:2379");
  EXPECT_EQ(&pool.client("https://10.0.0.1:2379"), &a);
  EXPECT_EQ(a.config().endpoints, std::vector<std::string>{"https://10.0.0.1:2379"});
  pool.client("https://10.0.0.2:2379");
  EXPECT_EQ(pool.size(), 2u);
  pool.forget_unused();  // both asked for since the last call
  EXPECT_EQ(pool.size(), 2u);
  EXPECT_EQ(&pool.client("https://10.0.0.1:2379"), &a);
  pool.forget_unused();  // only .1 asked for this round
  EXPECT_EQ(pool.size(), 1u);
  pool.reset();
  EXPECT_EQ(pool.size(), 0u);
}

}  // namespace
}  // namespace etcdadm

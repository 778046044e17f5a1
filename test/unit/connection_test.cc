// Tests of etcd/connection.{h,cc}: endpoints and the connection settings (flags, ETCDCTL_*).
#include "etcd/connection.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/error.h"

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

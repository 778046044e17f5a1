// Tests of etcd/connection.{h,cc}: endpoints and the connection settings (flags, ETCDCTL_*); and
// of etcd/tcp_connect.{h,cc}: whether anything listens.
#include "etcd/connection.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>

#include "common/error.h"
#include "common/unique_fd.h"
#include "etcd/tcp_connect.h"

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

// A port with a listener: something listens. The same port once closed: refused, told at once.
// What cannot be told (a unix socket, a name that does not resolve) is never "refused".
TEST(TcpConnect, RefusesConnectionsOnlyWhenTheHostSaysNothingListens) {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_GE(listener.get(), 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string url = "https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  EXPECT_FALSE(refuses_connections(url, std::chrono::milliseconds(500)));
  listener.reset();
  EXPECT_TRUE(refuses_connections(url, std::chrono::milliseconds(500)));
  EXPECT_FALSE(refuses_connections("unix:///tmp/etcdadm-no-such.sock", std::chrono::milliseconds(500)));
  EXPECT_FALSE(refuses_connections("https://no-such-host.invalid:2379", std::chrono::milliseconds(500)));
  EXPECT_EQ(host_and_port(parse_endpoint("https://[::1]:2379", false)),
            std::make_pair(std::string("::1"), std::string("2379")));
  EXPECT_THROW(
      connect_with_timeout("127.0.0.1", std::to_string(ntohs(addr.sin_port)), std::chrono::milliseconds(500), url),
      Error);
}

}  // namespace etcdadm

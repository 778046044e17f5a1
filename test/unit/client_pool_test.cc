// Tests of etcd/client_pool.{h,cc}: the controller's pool of etcd clients, one per endpoint.
#include "etcd/client_pool.h"

#include <gtest/gtest.h>

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

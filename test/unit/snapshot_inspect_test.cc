// Tests of etcd/datadir/snapshot_inspect.{h,cc}: the key range of a prefix, as etcd's WithPrefix.
#include "etcd/datadir/snapshot_inspect.h"

#include <gtest/gtest.h>

namespace etcdadm {
namespace {

TEST(PrefixRange, MatchesEtcdWithPrefix) {
  const std::string nul(1, '\0');
  auto r = prefix_range("/registry/");
  EXPECT_EQ(r.key, "/registry/");
  EXPECT_EQ(r.range_end, "/registry0");
  r = prefix_range("a\xff");
  EXPECT_EQ(r.range_end, "b");  // trailing 0xff bytes are dropped before the increment
  r = prefix_range("\xff\xff");
  EXPECT_EQ(r.range_end, nul);  // no upper bound
  r = prefix_range("");
  EXPECT_EQ(r.key, nul);  // every key
  EXPECT_EQ(r.range_end, nul);
}

}  // namespace
}  // namespace etcdadm

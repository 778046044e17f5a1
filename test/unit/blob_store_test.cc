// Tests of store/blob_store.{h,cc}: a store's keys as object names under a prefix, listed page by
// page (ObjectKeys).
#include "store/blob_store.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "test/support/error_of.h"

namespace etcdadm {
namespace {

using test::kind_of;

TEST(ObjectKeysListing, ForeignKeysAreSkippedAndARepeatedTokenEndsTheListing) {
  ObjectKeys keys{"prod/etcd"};
  int pages = 0;
  auto out = keys.list("", [&](const std::string& prefix, const std::string& token, std::vector<BlobInfo>& objects) {
    EXPECT_EQ(prefix, "prod/etcd/");
    objects.push_back({"prod/etcd/a/etcd.backup.gz", 1, 0});
    objects.push_back({"elsewhere/b/etcd.backup.gz", 2, 0});  // not under the prefix asked for
    objects.push_back({"prod/etcdX/c", 3, 0});
    return ++pages < 3 ? "t" + std::to_string(pages) : std::string();
  });
  ASSERT_EQ(out.size(), 3u);  // one real key per page
  EXPECT_EQ(out[0].key, "a/etcd.backup.gz");

  int calls = 0;
  EXPECT_EQ(kind_of([&] {
              keys.list("", [&](const std::string&, const std::string&, std::vector<BlobInfo>&) {
                ++calls;
                return std::string("same-token");
              });
            }),
            ErrorKind::kCorrupt);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace etcdadm

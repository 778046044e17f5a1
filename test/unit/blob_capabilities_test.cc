// Tests of store/blob_capabilities.{h,cc}: what a store can do beyond the BlobStore interface.
#include "store/blob_capabilities.h"

#include <gtest/gtest.h>

#include "store/backend/local/local_store.h"
#include "test/support/file_mode.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

using test::mode_of;

// A local directory has file modes and leftover temp files, and nothing of an object store's:
// the free forms do what the capability says where there is one and nothing where there is none.
TEST(BlobCapabilities, ALocalStoreHasFileModesAndLeftoversOnly) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  BlobStore& blobs = store;
  EXPECT_NE(capability<FileModes>(blobs), nullptr);
  EXPECT_NE(capability<LeftoverUploads>(blobs), nullptr);
  EXPECT_EQ(capability<VersionedBlobs>(blobs), nullptr);
  EXPECT_EQ(capability<BlobLocks>(blobs), nullptr);
  EXPECT_EQ(capability<ReloadableCredentials>(blobs), nullptr);

  set_file_mode(blobs, 0640);
  store.write_small("b/one", "x");
  EXPECT_EQ(mode_of(dir / "store/b/one"), 0640u);
  EXPECT_EQ(mode_of(dir / "store/b"), 0750u);
  EXPECT_TRUE(access_findings(blobs, 0640).empty());
  EXPECT_FALSE(access_findings(blobs, 0600).empty()) << "0640 files exceed 0600";
  EXPECT_FALSE(lock_of(blobs, "b/one"));
  auto purge = purge_noncurrent_versions(blobs, "");
  EXPECT_FALSE(purge.versioned);
  EXPECT_EQ(purge.removed, 0u);
  reload_credentials(blobs);  // nothing to reload, and no error
  EXPECT_EQ(store.read_small("b/one"), "x");
}

}  // namespace
}  // namespace etcdadm

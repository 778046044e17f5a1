// Tests of store/backend/local/local_store.{h,cc}: the store in a local directory (atomic writes,
// symbolic links never followed).
#include "store/backend/local/local_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "store/blob_store.h"
#include "test/support/test_env.h"

namespace etcdadm {

TEST(LocalStore, AtomicCreateAndList) {
  test::TempDir dir;
  LocalStore store(dir.path());
  auto w = store.create("a/one", false);
  w->write(reinterpret_cast<const uint8_t*>("hello"), 5);
  EXPECT_TRUE(store.list("").empty());  // invisible before commit
  w->commit();
  ASSERT_EQ(store.list("").size(), 1u);
  EXPECT_EQ(store.read_small("a/one"), "hello");
  EXPECT_THROW(store.create("a/one", false)->commit(), Error);  // never replaced silently
  {
    auto aborted = store.create("a/two", false);
    aborted->write(reinterpret_cast<const uint8_t*>("x"), 1);
  }  // destroyed uncommitted
  EXPECT_FALSE(store.stat("a/two"));
  EXPECT_EQ(store.list("").size(), 1u);
  store.remove("a/one");
  EXPECT_TRUE(store.list("").empty());
  EXPECT_THROW(store.create("../escape", false), Error);
}

// A store moved away while a file is being written (the sidecar's store outage): the write
// commits, or its temp file goes, in the directory it was created in, wherever that is now.
TEST(LocalStore, AWriteOutlivesARenameOfItsDirectoryWithoutLeavingATempFile) {
  test::TempDir dir;
  std::string store = dir / "store", away = dir / "away";
  LocalStore s(store);
  s.write_small("b/first", "1");
  auto committed = s.create("b/second", false);
  auto aborted = s.create("b/third", false);
  committed->write(reinterpret_cast<const uint8_t*>("2"), 1);
  aborted->write(reinterpret_cast<const uint8_t*>("3"), 1);
  ASSERT_EQ(::rename(store.c_str(), away.c_str()), 0);
  committed->commit();
  aborted.reset();  // destroyed uncommitted
  ASSERT_EQ(::rename(away.c_str(), store.c_str()), 0);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(store + "/b")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(s.read_small("b/second"), "2");
}

TEST(LocalStoreLinks, ASymbolicLinkIsNoBlob) {
  test::TempDir dir;
  write_file_atomic(dir.path() + "/secret", "not a backup", 0600);
  LocalStore store(dir.path() + "/s");
  store.write_small("b/etcd.backup.gz", "x");
  ASSERT_EQ(::symlink((dir.path() + "/secret").c_str(), (dir.path() + "/s/b/_etcd_backup.meta").c_str()), 0);
  auto listed = store.list("");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].key, "b/etcd.backup.gz");
  EXPECT_FALSE(store.stat("b/_etcd_backup.meta"));
  try {
    store.open("b/_etcd_backup.meta");
    FAIL() << "a link was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
}

// A link anywhere on the way, not only at the last component: `b/link -> <a live data dir>` must not
// make `b/link/db` readable, statable, removable or writable through the store. (Before the fix,
// open and stat followed it: O_NOFOLLOW covers only a path's last component.)
TEST(LocalStoreLinks, ALinkedDirectoryOnTheWayIsNeverFollowed) {
  test::TempDir dir;
  make_dirs(dir.path() + "/live/member/snap");
  write_file_atomic(dir.path() + "/live/member/snap/db", "the live database", 0600);
  LocalStore store(dir.path() + "/s");
  store.write_small("b/etcd.backup.gz", "x");
  ASSERT_EQ(::symlink((dir.path() + "/live/member/snap").c_str(), (dir.path() + "/s/b/link").c_str()), 0);
  ASSERT_EQ(::symlink((dir.path() + "/live").c_str(), (dir.path() + "/s/c").c_str()), 0);
  for (const std::string& key : std::vector<std::string>{"b/link/db", "c/member/snap/db"}) {
    try {
      store.open(key);
      ADD_FAILURE() << key << " was read through a link";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << e.what();
      EXPECT_NE(std::string(e.what()).find("is a symbolic link"), std::string::npos) << e.what();
    }
    EXPECT_THROW(store.stat(key), Error) << key;
    EXPECT_THROW(store.remove(key), Error) << key;
    EXPECT_THROW(store.write_small(key, "overwritten"), Error) << key;
  }
  EXPECT_EQ(read_file(dir.path() + "/live/member/snap/db"), "the live database");
  // A key with "." or ".." segments, an empty segment or a control character is refused before any
  // path or URL is made of it.
  for (const std::string& key : std::vector<std::string>{"../s/b/etcd.backup.gz", "b/../b/etcd.backup.gz",
                                                        "b/./etcd.backup.gz", "b//x", "/b/x", "b/x\n"}) {
    EXPECT_THROW(store.open(key), Error) << key;
    EXPECT_THROW(check_store_key(key), Error) << key;
  }
  for (const std::string& key :
       std::vector<std::string>{"", "b/", "changelog/", "b/etcd.backup.gz", "2026-11-21T10:00:00Z-000001/x.age"}) {
    EXPECT_NO_THROW(check_store_key(key)) << key;
  }
  ObjectKeys keys{"root/dir"};
  EXPECT_EQ(keys.object("b/etcd.backup.gz"), "root/dir/b/etcd.backup.gz");
  EXPECT_THROW(keys.object("b/../../other/etcd.backup.gz"), Error);
}

}  // namespace etcdadm

// Telling whether a directory is in use: the locks etcd takes (bbolt's flock on the db, the WAL's
// OFD locks) are seen even when /proc does not show the holder (another user's process), and the
// holders /proc does show are named with their PID.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/error.h"
#include "common/file_users.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "test/support/skips.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

TEST(FileUsers, FlockAndOfdLocksAreSeen) {
  test::TempDir dir;
  make_dirs(dir / "member/snap");
  make_dirs(dir / "member/wal");
  write_file_atomic(dir / "member/snap/db", "db");
  write_file_atomic(dir / "member/wal/0.wal", "wal");
  EXPECT_TRUE(locked_files(dir.path()).empty());
  EXPECT_NO_THROW(refuse_if_in_use(dir.path(), "restore into", "stop it"));

  int db = ::open((dir / "member/snap/db").c_str(), O_RDWR);
  ASSERT_EQ(::flock(db, LOCK_EX | LOCK_NB), 0);  // what bbolt does
  auto locked = locked_files(dir.path());
  ASSERT_EQ(locked.size(), 1u);
  EXPECT_EQ(locked[0], dir / "member/snap/db");
  ::close(db);
  EXPECT_TRUE(locked_files(dir.path()).empty());

  int wal = ::open((dir / "member/wal/0.wal").c_str(), O_RDWR);
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(wal, F_OFD_SETLK, &fl), 0);  // what etcd's fileutil.TryLockFile does on Linux
  try {
    refuse_if_in_use(dir.path(), "restore into", "stop it");
    ADD_FAILURE() << "a locked WAL was not seen";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInUse);
    EXPECT_EQ(exit_code_for(e.kind()), 4);
    EXPECT_NE(std::string(e.what()).find("0.wal"), std::string::npos) << e.what();
    EXPECT_EQ(e.hint(), "stop it");
  }
  ::close(wal);
}

TEST(FileUsers, HoldersAreNamedWithPidAndCommand) {
  test::TempDir dir;
  write_file_atomic(dir / "held", "x");
  write_file_atomic(dir.path() + "2", "a sibling with the same prefix is not inside");
  // A child holding the file open on its stdin.
  ChildProcess holder = ChildProcess::start({"sh", "-c", "exec sleep 30 < '" + (dir / "held") + "'"}, dir.path() + ".log");
  std::vector<FileHolder> holders;
  for (int i = 0; i < 100 && holders.empty(); ++i) {
    holders = processes_holding(dir.path());
    if (holders.empty()) usleep(20000);
  }
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].pid, holder.pid());
  EXPECT_NE(holders[0].command.find("sleep 30"), std::string::npos) << holders[0].command;
  EXPECT_EQ(holders[0].file, dir / "held");
  holder.stop(std::chrono::milliseconds(100));
  EXPECT_TRUE(processes_holding(dir.path()).empty());
  ::unlink((dir.path() + "2").c_str());
  ::unlink((dir.path() + ".log").c_str());
}

// Inside a data dir on its own disk, restores' staging dirs (`.etcdadm-restore-*`, each with its
// locked `.lock`, perhaps a restore tool holding a file) are not the member's files; everything
// else still counts.
TEST(FileUsers, SkippedEntriesDoNotCountAndEverythingElseStill) {
  test::TempDir dir;
  make_dirs(dir / ".etcdadm-restore-1/data");
  write_file_atomic(dir / ".etcdadm-restore-1/.lock", "");
  write_file_atomic(dir / ".etcdadm-restore-1/data/db", "db");
  int lock = ::open((dir / ".etcdadm-restore-1/.lock").c_str(), O_RDWR);
  ASSERT_EQ(::flock(lock, LOCK_EX | LOCK_NB), 0);
  ChildProcess tool = ChildProcess::start({"sh", "-c", "exec sleep 30 < '" + (dir / ".etcdadm-restore-1/data/db") + "'"},
                                          dir.path() + ".log");
  for (int i = 0; i < 100 && processes_holding(dir.path()).empty(); ++i) usleep(20000);
  EXPECT_THROW(refuse_if_in_use(dir.path(), "replace", "stop it"), Error);
  EXPECT_NO_THROW(refuse_if_in_use(dir.path(), "replace", "stop it", kRestoreStagingPrefix));

  make_dirs(dir / "member/snap");
  write_file_atomic(dir / "member/snap/db", "db");
  int db = ::open((dir / "member/snap/db").c_str(), O_RDWR);
  ASSERT_EQ(::flock(db, LOCK_EX | LOCK_NB), 0);
  EXPECT_THROW(refuse_if_in_use(dir.path(), "replace", "stop it", kRestoreStagingPrefix), Error);
  ::close(db);
  ::close(lock);
  tool.stop(std::chrono::milliseconds(100));
  ::unlink((dir.path() + ".log").c_str());
}

TEST(FileSystemRoot, MountRootsAreToldFromOrdinaryDirectories) {
  EXPECT_TRUE(is_filesystem_root("/"));
  EXPECT_TRUE(is_filesystem_root("/proc"));
  EXPECT_FALSE(is_filesystem_root("/proc/sys/kernel"));
  test::TempDir dir;
  make_dirs(dir / "data/lost+found");
  EXPECT_FALSE(is_filesystem_root(dir / "data"));
  // lost+found makes only a filesystem root empty: in an ordinary directory it is data.
  EXPECT_FALSE(is_empty_data_dir(dir / "data"));
  EXPECT_TRUE(is_empty_data_dir(dir / "missing"));
  remove_data_dir(dir / "data");
  EXPECT_FALSE(path_exists(dir / "data"));
}

// What tells an unmounted data volume from lost data: the device a path is on, or its nearest
// existing ancestor's.
TEST(FileSystemRoot, TheDeviceOfAPathOrItsNearestAncestor) {
  test::TempDir dir;
  make_dirs(dir / "data");
  EXPECT_NE(device_of_path(dir / "data"), 0u);
  EXPECT_EQ(device_of_path(dir / "data/not/there/yet"), device_of_path(dir / "data"));
  EXPECT_EQ(device_of_path(dir / "data"), device_of_path(dir.path()));
  EXPECT_NE(device_of_path("/proc/sys"), device_of_path("/"));  // another filesystem mounted there
}

// A manifest folder mounted on its own (the kubelet's stop and kubeadm's restore runbook rename the
// manifest to the folder above): the rename across filesystems is refused naming why, and the file
// stays where it was. /dev/shm is a tmpfs of its own here.
TEST(FileSystemRoot, ARenameAcrossFilesystemsIsRefusedNamingWhyAndMovesNothing) {
  test::TempDir dir;
  char shm_template[] = "/dev/shm/etcdadm-test-XXXXXX";
  ASSERT_NE(::mkdtemp(shm_template), nullptr);
  const std::string shm = shm_template;
  struct Removed {
    std::string path;
    ~Removed() { std::filesystem::remove_all(path); }
  } removed{shm};
  ASSERT_NE(device_of_path(shm), device_of_path(dir.path())) << "/dev/shm is not a filesystem of its own";
  write_file_atomic(shm + "/etcd.yaml", "kind: Pod\n", 0600);
  try {
    rename_durably(shm + "/etcd.yaml", dir / "etcd.yaml.etcdadm-stopped");
    ADD_FAILURE() << "moved across filesystems";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Invalid cross-device link"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("is on another filesystem: a rename cannot move a file there"), std::string::npos)
        << e.hint();
  }
  EXPECT_EQ(read_file(shm + "/etcd.yaml"), "kind: Pod\n");
  EXPECT_FALSE(path_exists(dir / "etcd.yaml.etcdadm-stopped"));
}

// A restore plan's hosts keep their old data for a person: beside an ordinary data dir, inside
// one that is a filesystem root (nothing renames out of a mount), where is_empty_data_dir ignores it.
TEST(FileSystemRoot, SetAsideKeepsTheDataBesideOrInsideAMountRoot) {
  test::TempDir dir;
  const std::string data = dir / "data";
  make_dirs(data + "/member/snap");
  write_file_atomic(data + "/member/snap/db", "old", 0600, false);
  EXPECT_EQ(set_aside_data_dir(data, "plan2-1"), data + ".set-aside-plan2-1");
  EXPECT_EQ(read_file(data + ".set-aside-plan2-1/member/snap/db"), "old");
  EXPECT_TRUE(is_missing_or_empty_dir(data));
  struct stat st {};
  ASSERT_EQ(::stat(data.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(set_aside_data_dir(data, "plan2-1"), "") << "nothing to set aside";
  make_dirs(data + "/member");
  EXPECT_THROW(set_aside_data_dir(data, "plan2-1"), Error) << "never over an earlier one";
  EXPECT_TRUE(path_exists(data + "/member"));
  // Pruning by label prefix: only the matching set-asides go, never the data dir itself.
  ASSERT_EQ(set_aside_data_dir(data, "removed-1-100"), data + ".set-aside-removed-1-100");
  make_dirs(data + "/member");
  ASSERT_EQ(set_aside_data_dir(data, "corrupt-1-100"), data + ".set-aside-corrupt-1-100");
  EXPECT_EQ(remove_set_asides(data, "removed-"), std::vector<std::string>{data + ".set-aside-removed-1-100"});
  EXPECT_FALSE(path_exists(data + ".set-aside-removed-1-100"));
  EXPECT_TRUE(path_exists(data + ".set-aside-corrupt-1-100/member"));
  EXPECT_TRUE(path_exists(data + ".set-aside-plan2-1/member/snap/db"));
  EXPECT_TRUE(path_exists(data));
  EXPECT_TRUE(remove_set_asides(data, "removed-").empty());

  if (::geteuid() != 0) ETCDADM_SKIP_OUTSIDE_CI() << "mounting a tmpfs needs root";
  test::ScopedTmpfs disk(dir / "disk", "size=4m,mode=0700");
  make_dirs(dir / "disk/lost+found");
  make_dirs(dir / "disk/member/wal");
  EXPECT_FALSE(is_empty_data_dir(dir / "disk"));
  EXPECT_EQ(set_aside_data_dir(dir / "disk", "plan3-1"), (dir / "disk") + "/.etcdadm-set-aside-plan3-1");
  EXPECT_TRUE(is_empty_data_dir(dir / "disk"));
  EXPECT_TRUE(path_exists(dir / "disk/lost+found"));
  EXPECT_TRUE(path_exists(dir / "disk/.etcdadm-set-aside-plan3-1/member/wal"));
  make_dirs(dir / "disk/member/wal");
  ASSERT_EQ(set_aside_data_dir(dir / "disk", "removed-2-5"), (dir / "disk") + "/.etcdadm-set-aside-removed-2-5");
  EXPECT_EQ(remove_set_asides(dir / "disk", "removed-"), std::vector<std::string>{(dir / "disk") + "/.etcdadm-set-aside-removed-2-5"});
  EXPECT_TRUE(path_exists(dir / "disk/.etcdadm-set-aside-plan3-1/member/wal"));
}

}  // namespace
}  // namespace etcdadm

// Reading a member's raft files (etcd/datadir/raft_files.h) from the bytes etcd's own restore
// tools write for a new member, which the native restore reproduces byte for byte (the vectors of
// native_restore_test.cc): the raft snapshot's index, the WAL's member and cluster IDs, and what a
// broken file reads as.
#include "etcd/datadir/raft_files.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/fs.h"
#include "etcd/datadir/wal_writer.h"
#include "restore/native_restore.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

const char* const kThree = "m1=http://127.0.0.1:2380,m2=http://127.0.0.2:2380,m3=http://127.0.0.3:2380";

TEST(RaftFiles, TheNewestSnapshotThatReadsGivesTheIndex) {
  test::TempDir dir;
  const std::string snap = dir.path() + "/snap";
  make_dirs(snap, 0700);
  EXPECT_EQ(newest_raft_snapshot_index(snap), 0u) << "no snapshot: the log begins at index 1";
  EXPECT_EQ(newest_raft_snapshot_index(dir.path() + "/absent"), 0u);
  const NewCluster c = plan_new_cluster(kThree, "tok");
  const EtcdVersion v = *EtcdVersion::parse("3.7.3");
  // etcd names it <term>-<index>; the restore's snapshot is at index 3 (one entry per member).
  write_file_atomic(snap + "/0000000000000001-0000000000000003.snap", snap_file_for_restore(c, v), 0600);
  EXPECT_EQ(newest_raft_snapshot_index(snap), 3u);
  // A newer file that does not hold (a torn write, a flipped bit) is passed over, as etcd does.
  std::string flipped = snap_file_for_restore(c, v);
  flipped[flipped.size() - 3] ^= 0x20;
  write_file_atomic(snap + "/0000000000000002-0000000000000009.snap", flipped, 0600);
  write_file_atomic(snap + "/0000000000000002-000000000000000a.snap", "", 0600);
  write_file_atomic(snap + "/0000000000000002-000000000000000b.snap.broken", snap_file_for_restore(c, v), 0600);
  EXPECT_EQ(newest_raft_snapshot_index(snap), 3u);
}

TEST(RaftFiles, TheWalNamesItsMemberAndCluster) {
  test::TempDir dir;
  const std::string wal = dir.path() + "/wal";
  make_dirs(wal, 0700);
  EXPECT_THROW(wal_identity(wal), Error);
  const NewCluster c = plan_new_cluster(kThree, "tok");
  std::string records = wal_records_for_restore(c, "m2", *EtcdVersion::parse("3.4.23"));
  records.resize(4096, '\0');
  write_file_atomic(wal + "/" + wal_file_name(0, 0), records, 0600);
  const WalIdentity id = wal_identity(wal);
  EXPECT_EQ(id.member_id, c.member("m2").id);
  EXPECT_EQ(id.cluster_id, c.cluster_id);

  // A metadata record whose CRC does not hold is not believed.
  std::string forged = records;
  // The metadata frame follows the 16-byte crc frame; its record's last byte is its data's last.
  uint64_t field = 0;
  for (int i = 0; i < 8; ++i) field |= uint64_t{static_cast<unsigned char>(forged[16 + i])} << (8 * i);
  forged[16 + 8 + (field & 0xffffffffffffffULL) - 1] ^= 0x01;
  write_file_atomic(wal + "/" + wal_file_name(1, 5), forged, 0600);
  try {
    wal_identity(wal);
    ADD_FAILURE() << "a forged metadata record was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << e.what();
  }
}

}  // namespace
}  // namespace etcdadm

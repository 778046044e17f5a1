// Tests of restore/log_replay.{h,cc}: a change log record prepared as the bytes etcd's database
// holds.
#include "restore/log_replay.h"

#include <gtest/gtest.h>

#include "test/support/changelog_records.h"

namespace etcdadm::changelog {
namespace {

using test::make_record;

TEST(ChangeLogReplayRecord, TheDbBytesAreEtcdsAndAForeignEventIsADefectNotAnError) {
  Record r = make_record(7, 3, 7);  // two PUTs and a DELETE, one lease
  PreparedRecord p = prepare_record(r);
  EXPECT_EQ(p.revision, 7);
  EXPECT_EQ(p.events, 3u);
  ASSERT_EQ(p.keys.size(), 3u);
  // (revision, sub) as etcd's revToBytes writes it: 8 bytes big endian, '_', 8 bytes big endian;
  // a tombstone's key ends in 't' and its value holds only the key.
  EXPECT_EQ(p.keys[0].first, std::string("\0\0\0\0\0\0\0\x07_\0\0\0\0\0\0\0\0", 17));
  EXPECT_EQ(p.keys[1].first, std::string("\0\0\0\0\0\0\0\x07_\0\0\0\0\0\0\0\x01", 17));
  EXPECT_EQ(p.keys[2].first, std::string("\0\0\0\0\0\0\0\x07_\0\0\0\0\0\0\0\x02t", 18));
  EXPECT_EQ(p.keys[0].second, r.events(0).kv().SerializeAsString());
  etcdserverpb::KeyValue tomb;
  ASSERT_TRUE(tomb.ParseFromString(p.keys[2].second));
  EXPECT_EQ(tomb.key(), r.events(2).kv().key());
  EXPECT_EQ(tomb.value(), "");
  ASSERT_EQ(p.leases.size(), 1u);
  EXPECT_EQ(p.leases[0].first, std::string("\0\0\0\0\0\0\0\x07", 8));

  r.mutable_events(1)->mutable_kv()->set_mod_revision(6);
  PreparedRecord bad = prepare_record(r);
  EXPECT_NE(bad.defect.find("holds an event of revision 6"), std::string::npos) << bad.defect;
}

}  // namespace
}  // namespace etcdadm::changelog

// Tests of changelog/segment.{h,cc}, the change log's segment format: names, the bytes (compressed,
// encrypted), every check a reader makes, and how a chain of segments is chosen across overlaps
// and gaps.
#include "changelog/segment.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "store/backend/local/local_store.h"
#include "test/support/changelog_records.h"
#include "test/support/error_of.h"
#include "test/support/test_env.h"

namespace etcdadm::changelog {

namespace {

using test::make_record;
using test::message_of;
using test::write_segment;

std::vector<int64_t> revisions_of(const BackupStore& store, const SegmentName& s) {
  std::vector<int64_t> out;
  read_segment(store, s, [&](const Record& r) { out.push_back(r.revision()); });
  return out;
}
std::vector<int64_t> revisions_of(BlobStore& store, const SegmentName& s) { return revisions_of(BackupStore(store), s); }

// Revisions 1001..1500 of cluster cdf818194e3a8c32, the last received at 1795242990123 ms.
SegmentName example_name(Compression compression) {
  SegmentName s;
  s.cluster_id = "cdf818194e3a8c32";
  s.first_revision = 1001;
  s.last_revision = 1500;
  s.last_observed_ms = 1795242990123;
  s.sha256 = std::string(64, 'a');
  s.compression = compression;
  return s;
}

}  // namespace

TEST(ChangeLogSegment, NamesCarryTheRangeTimeAndDigestAndParseBack) {
  SegmentName s = example_name(Compression::kGzip);
  s.encrypted = true;
  EXPECT_EQ(s.key(), "changelog/cdf818194e3a8c32/00000000000000001001-00000000000000001500-1795242990123-" +
                         std::string(64, 'a') + ".seg.gz.age");
  auto back = parse_segment_key(s.key());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->first_revision, 1001);
  EXPECT_EQ(back->last_revision, 1500);
  EXPECT_EQ(back->last_observed_ms, 1795242990123);
  EXPECT_TRUE(back->encrypted);
  EXPECT_EQ(back->compression, Compression::kGzip);
  // With the recipients' key ID (encrypted segments written since it was added).
  s.key_id = "0123456789abcdef";
  EXPECT_EQ(s.key(), "changelog/cdf818194e3a8c32/00000000000000001001-00000000000000001500-1795242990123-" +
                         std::string(64, 'a') + "-0123456789abcdef.seg.gz.age");
  auto with_id = parse_segment_key(s.key());
  ASSERT_TRUE(with_id);
  EXPECT_EQ(with_id->key_id, "0123456789abcdef");
  EXPECT_EQ(with_id->key(), s.key());
  EXPECT_FALSE(parse_segment_key("changelog/cdf8/00000000000000001001-00000000000000001500-1795242990123-" +
                                 std::string(64, 'a') + "-0123456789abcdef.seg.gz"))
      << "a key ID on a plain segment";
  EXPECT_FALSE(parse_segment_key("changelog/cdf8/00000000000000001001-00000000000000001500-1795242990123-" +
                                 std::string(64, 'a') + "-0123456789abcdeg.seg.gz.age"));
  for (const char* bad : {"changelog/x/readme", "changelog/cdf8/00000000000000001001-00000000000000001500.seg.gz",
                          "other/cdf8/00000000000000001001-00000000000000001500-1795242990123-aaaa.seg",
                          "changelog/cdf8/00000000000000001501-00000000000000001500-1795242990123-"
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.seg.gz"}) {
    EXPECT_FALSE(parse_segment_key(bad)) << bad;
  }
}

// The tag (store-format.md §8, "Authenticated segments") follows the key ID, before the
// extensions; its message covers the name's fields but not the key ID.
TEST(ChangeLogSegment, ATaggedNameParsesBackAndTheTagCoversTheRangeTimeAndDigest) {
  SegmentName s = example_name(Compression::kZstd);
  s.tag = "0123456789abcdef0123456789abcdef";
  const std::string prefix =
      "changelog/cdf818194e3a8c32/00000000000000001001-00000000000000001500-1795242990123-" + std::string(64, 'a');
  EXPECT_EQ(s.key(), prefix + "-m0123456789abcdef0123456789abcdef.seg.zst");
  auto back = parse_segment_key(s.key());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->tag, s.tag);
  EXPECT_EQ(back->key(), s.key());
  s.encrypted = true;
  s.key_id = "fedcba9876543210";
  EXPECT_EQ(s.key(), prefix + "-fedcba9876543210-m0123456789abcdef0123456789abcdef.seg.zst.age");
  back = parse_segment_key(s.key());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->key_id, s.key_id);
  EXPECT_EQ(back->tag, s.tag);
  for (const std::string& bad : {prefix + "-m0123456789abcdef0123456789abcdeg.seg.zst",  // not hex
                                prefix + "-m0123456789abcdef.seg.zst",                  // too short
                                prefix + "-m0123456789ABCDEF0123456789abcdef.seg.zst"}) {  // upper case
    EXPECT_FALSE(parse_segment_key(bad)) << bad;
  }
  EXPECT_EQ(segment_tag_message(s),
            "etcdadm-changelog-segment/1\ncdf818194e3a8c32\n1001\n1500\n1795242990123\n" + std::string(64, 'a') + "\n");
  SegmentName rekeyed = s;
  rekeyed.key_id = "0000000000000000";
  EXPECT_EQ(segment_tag_message(rekeyed), segment_tag_message(s));
  for (auto change : std::vector<std::function<void(SegmentName&)>>{
           [](SegmentName& n) { n.cluster_id = "cdf818194e3a8c33"; }, [](SegmentName& n) { ++n.first_revision; },
           [](SegmentName& n) { ++n.last_revision; }, [](SegmentName& n) { ++n.last_observed_ms; },
           [](SegmentName& n) { n.sha256[0] = 'b'; }}) {
    SegmentName other = s;
    change(other);
    EXPECT_NE(segment_tag_message(other), segment_tag_message(s));
  }
}

TEST(ChangeLogLateWindow, TheMarkerNameCarriesTheWindowAndParsesBack) {
  LateWindow w{"cdf818194e3a8c32", 1001, 1500, 1795242990123, 1795242994456};
  EXPECT_EQ(w.key(), "changelog/cdf818194e3a8c32/00000000000000001001-00000000000000001500-1795242990123-1795242994456.late");
  auto back = parse_late_key(w.key());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->cluster_id, w.cluster_id);
  EXPECT_EQ(back->first_revision, 1001);
  EXPECT_EQ(back->last_revision, 1500);
  EXPECT_EQ(back->committed_after_ms, 1795242990123);
  EXPECT_EQ(back->received_ms, 1795242994456);
  // Not a marker: a segment, a range backwards, received before its bound, a stray suffix.
  EXPECT_FALSE(parse_late_key("changelog/cdf8/00000000000000001001-00000000000000001500-1795242990123-1795242994456.seg"));
  EXPECT_FALSE(parse_late_key("changelog/cdf8/00000000000000001500-00000000000000001001-1795242990123-1795242994456.late"));
  EXPECT_FALSE(parse_late_key("changelog/cdf8/00000000000000001001-00000000000000001500-1795242994456-1795242990123.late"));
  EXPECT_FALSE(parse_late_key("changelog/cdf8/00000000000000001001-00000000000000001500-1795242990123-1795242994456.late.x"));
  EXPECT_FALSE(parse_segment_key(w.key())) << "a marker is never taken for a segment";
  // One listing gives segments and markers apart.
  test::TempDir dir;
  LocalStore store(dir.path());
  store.write_small(w.key(), "{}\n");
  std::vector<LateWindow> late;
  EXPECT_TRUE(list_segments(store, "cdf818194e3a8c32", nullptr, &late).empty());
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].key(), w.key());
}

TEST(ChangeLogSegment, RecordsComeBackInOrderCompressedOrEncrypted) {
  test::TempDir dir;
  LocalStore store(dir.path());
  auto plain = write_segment(store, 10, 40, Compression::kZstd);
  EXPECT_EQ(revisions_of(store, plain).size(), 31u);
  auto id = age::generate_identity();
  age::Recipients to;
  to.x25519 = {id.recipient()};
  auto enc = write_segment(store, 41, 60, Compression::kGzip, to);
  EXPECT_TRUE(enc.encrypted);
  // Without the key: refused, naming the segment; with it: every record.
  EXPECT_NE(message_of([&] { revisions_of(store, enc); }).find(enc.key()), std::string::npos);
  auto keys = std::make_shared<age::Identities>();
  keys->x25519 = {id};
  const BackupStore with_keys(store, keys);
  auto revs = revisions_of(with_keys, enc);
  ASSERT_EQ(revs.size(), 20u);
  EXPECT_EQ(revs.front(), 41);
  EXPECT_EQ(revs.back(), 60);
  // A record's content survives: events, leases, times.
  std::optional<Record> r45;
  read_segment(with_keys, enc, [&](const Record& r) {
    if (r.revision() == 45) r45 = r;
  });
  ASSERT_TRUE(r45);
  EXPECT_EQ(r45->SerializeAsString(), make_record(45, 2, 45).SerializeAsString());
  auto listed = list_segments(store, "cdf818194e3a8c32");
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].first_revision, 10);
  EXPECT_EQ(listed[1].first_revision, 41);
  // A builder refuses a revision that does not follow.
  SegmentBuilder b(Compression::kGzip, std::nullopt);
  b.add(make_record(5));
  EXPECT_THROW(b.add(make_record(7)), Error);
}

TEST(ChangeLogSegment, DamageAWrongRangeAndAMissingSegmentAreNamed) {
  test::TempDir dir;
  LocalStore store(dir.path());
  auto s = write_segment(store, 100, 120);
  std::string path = dir / s.key();
  std::string good = read_file(path);

  std::string bad = good;
  bad[bad.size() / 2] ^= 0x20;
  write_file_atomic(path, bad, 0600);
  std::string m = message_of([&] { revisions_of(store, s); });
  EXPECT_NE(m.find("SHA-256"), std::string::npos) << m;
  EXPECT_NE(m.find(s.key()), std::string::npos) << m;

  // The same bytes under a name that claims one revision more (digest agreeing): the records say otherwise.
  write_file_atomic(path, good, 0600);
  SegmentName longer = s;
  longer.last_revision = 121;
  write_file_atomic(dir / longer.key(), good, 0600);
  m = message_of([&] { revisions_of(store, longer); });
  EXPECT_NE(m.find("ends at revision 120"), std::string::npos) << m;
  SegmentName later = s;
  later.first_revision = 101;
  later.last_revision = 121;
  write_file_atomic(dir / later.key(), good, 0600);
  m = message_of([&] { revisions_of(store, later); });
  EXPECT_NE(m.find("revision 100 where 101 belongs"), std::string::npos) << m;

  SegmentName missing = s;
  missing.first_revision = 500;
  missing.last_revision = 510;
  m = message_of([&] { revisions_of(store, missing); });
  EXPECT_NE(m.find("missing"), std::string::npos) << m;
}

TEST(ChangeLogChain, OverlapsResolveByRevisionAndGapsStopTheChain) {
  auto seg = [](int64_t first, int64_t last, int64_t ms = 0) {
    SegmentName s;
    s.cluster_id = "c";
    s.first_revision = first;
    s.last_revision = last;
    s.last_observed_ms = ms ? ms : last * 10;
    s.sha256 = std::to_string(first);
    return s;
  };
  // 101-200, a racing 150-250 and 180-220, then 251-300; a gap; 400-500.
  std::vector<SegmentName> all = {seg(101, 200), seg(150, 250), seg(180, 220), seg(251, 300), seg(400, 500)};
  LogChain c = chain_from(all, 100);
  ASSERT_EQ(c.segments.size(), 3u);
  EXPECT_EQ(c.segments[0].first_revision, 101);
  EXPECT_EQ(c.segments[1].first_revision, 150);  // reaches furthest from 201
  EXPECT_EQ(c.segments[2].first_revision, 251);
  EXPECT_EQ(c.reaches, 300);
  EXPECT_EQ(c.reaches_observed_ms, 3000);
  ASSERT_TRUE(c.next_segment_start);
  EXPECT_EQ(*c.next_segment_start, 400);
  // A snapshot inside a segment starts there; a target stops the chain early.
  LogChain mid = chain_from(all, 160, 210);
  ASSERT_EQ(mid.segments.size(), 1u);
  EXPECT_EQ(mid.segments[0].first_revision, 150);
  EXPECT_EQ(mid.reaches, 250);
  // After the gap, a snapshot of revision 399 continues with the last segment.
  EXPECT_EQ(chain_from(all, 399).reaches, 500);
  // No segment carries a snapshot at 300 on: the chain reaches the snapshot itself.
  LogChain none = chain_from(all, 350);
  EXPECT_TRUE(none.segments.empty());
  EXPECT_EQ(none.reaches, 350);
}

// A rekey killed between creating a segment's re-wrapped copy and deleting the old one leaves two
// segments of one range, each opening with one set of keys: a reader takes the one its keys open.
TEST(ChangeLogSegment, ATwinOfTheSameRangeIsReadWhenTheKeysOpenOnlyIt) {
  test::TempDir dir;
  LocalStore store(dir.path());
  auto old_id = age::generate_identity(), new_id = age::generate_identity();
  age::Recipients old_to, new_to;
  old_to.x25519 = {old_id.recipient()};
  new_to.x25519 = {new_id.recipient()};
  auto old_segment = write_segment(store, 11, 30, Compression::kGzip, old_to);
  // The re-wrapped copy, as rekey makes it: a new header around the same payload.
  std::string stored = read_segment_bytes(store, old_segment);
  age::Identities old_keys;
  old_keys.x25519 = {old_id};
  auto h = age::rewrap_header(stored, old_keys, new_to);
  std::string rewrapped = h.header + stored.substr(h.old_header_size);
  SegmentName twin = old_segment;
  twin.sha256 = to_hex(sha256_of(rewrapped.data(), rewrapped.size()));
  twin.key_id = "00000000000000aa";
  store.write_small(twin.key(), rewrapped);
  auto all = list_segments(store, "cdf818194e3a8c32");
  ASSERT_EQ(all.size(), 2u);
  auto new_keys = std::make_shared<age::Identities>();
  new_keys->x25519 = {new_id};
  std::vector<int64_t> revs;
  read_segment_or_twin(BackupStore(store, new_keys), old_segment, all, [&](const Record& r) { revs.push_back(r.revision()); });
  EXPECT_EQ(revs.size(), 20u);
  // Keys that open neither: the first segment's error.
  auto other = std::make_shared<age::Identities>();
  other->x25519 = {age::generate_identity()};
  EXPECT_NE(message_of([&] { read_segment_or_twin(BackupStore(store, other), old_segment, all, [](const Record&) {}); }).find(old_segment.key()),
            std::string::npos);
}

}  // namespace etcdadm::changelog

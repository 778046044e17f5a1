// The change log's segment format (changelog/segment.h): names, the bytes (compressed, encrypted),
// every check a reader makes, and how a chain of segments is chosen across overlaps and gaps.
#include <gtest/gtest.h>

#include "changelog/heartbeat.h"
#include "changelog/segment.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "restore/log_replay.h"
#include "restore/pitr.h"
#include "restore/segment_read_ahead.h"
#include "store/backend/local/local_store.h"
#include "test/support/test_env.h"

namespace etcdadm::changelog {

namespace {

Record make_record(int64_t rev, int events = 1, int64_t lease = 0) {
  Record r;
  r.set_revision(rev);
  r.set_observed_unix_micros(1795000000000000 + rev * 1000);
  for (int i = 0; i < events; ++i) {
    auto* e = r.add_events();
    e->set_type(i % 3 == 2 ? etcdserverpb::Event::DELETE : etcdserverpb::Event::PUT);
    e->mutable_kv()->set_key("/k/" + std::to_string(rev) + "/" + std::to_string(i));
    e->mutable_kv()->set_mod_revision(rev);
    if (e->type() == etcdserverpb::Event::PUT) {
      e->mutable_kv()->set_create_revision(rev);
      e->mutable_kv()->set_version(1);
      e->mutable_kv()->set_value(std::string(100 + i, 'v'));
      e->mutable_kv()->set_lease(lease);
    }
  }
  if (lease != 0) {
    auto* g = r.add_leases();
    g->set_id(lease);
    g->set_granted_ttl(30);
  }
  return r;
}

SegmentName write_segment(BlobStore& store, int64_t first, int64_t last, Compression c = Compression::kGzip,
                          std::optional<age::Recipients> to = std::nullopt) {
  SegmentBuilder b(c, to);
  for (int64_t rev = first; rev <= last; ++rev) b.add(make_record(rev, 1 + static_cast<int>(rev % 4), rev % 5 == 0 ? rev : 0));
  return b.write(store, "cdf818194e3a8c32");
}

std::vector<int64_t> revisions_of(const BackupStore& store, const SegmentName& s) {
  std::vector<int64_t> out;
  read_segment(store, s, [&](const Record& r) { out.push_back(r.revision()); });
  return out;
}
std::vector<int64_t> revisions_of(BlobStore& store, const SegmentName& s) { return revisions_of(BackupStore(store), s); }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace

TEST(ChangeLogSegment, NamesCarryTheRangeTimeAndDigestAndParseBack) {
  SegmentName s;
  s.cluster_id = "cdf818194e3a8c32";
  s.first_revision = 1001;
  s.last_revision = 1500;
  s.last_observed_ms = 1795242990123;
  s.sha256 = std::string(64, 'a');
  s.compression = Compression::kGzip;
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

TEST(PointInTimeTarget, RevisionEndAndTimeParseAndBadOnesAreRefused) {
  SystemTime now = *parse_rfc3339("2026-11-25T02:00:00Z");
  PointInTime none = point_in_time_from_flags("", "", now);
  EXPECT_FALSE(none.given());
  PointInTime rev = point_in_time_from_flags("1234", "", now);
  EXPECT_EQ(rev.revision, 1234);
  EXPECT_EQ(rev.describe(), "revision 1234");
  PointInTime end = point_in_time_from_flags("end", "", now);
  EXPECT_TRUE(end.given());
  EXPECT_TRUE(end.log_end);
  EXPECT_EQ(end.describe(), "the end of the change log");
  PointInTime ago = point_in_time_from_flags("", "-10m", now);
  ASSERT_TRUE(ago.time);
  EXPECT_EQ(format_rfc3339_micros(*ago.time), "2026-11-25T01:50:00.000000Z");
  PointInTime at = point_in_time_from_flags("", "2026-11-25T03:30:00+02:00", now);
  EXPECT_EQ(format_rfc3339_micros(*at.time), "2026-11-25T01:30:00.000000Z");
  for (auto [r, t] : std::vector<std::pair<std::string, std::string>>{
           {"12x", ""}, {"0", ""}, {"-5", ""}, {"last", ""}, {"", "yesterday"}, {"", "-0s"}, {"5", "-1m"}}) {
    EXPECT_THROW(point_in_time_from_flags(r, t, now), Error) << r << " / " << t;
  }
}

TEST(ChangeLogHeartbeat, WrittenBesideTheSegmentsAndProvesOnlyWhatTheChainHolds) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  EXPECT_FALSE(read_heartbeat(store, "c1"));
  write_heartbeat(store, "c1", Heartbeat{250, 1795000000123456});
  write_heartbeat(store, "c1", Heartbeat{300, 1795000009000000});  // overwritten in place
  bool listed = false;
  EXPECT_TRUE(list_segments(store, "c1", &listed).empty());
  EXPECT_TRUE(listed);
  auto hb = read_heartbeat(store, "c1");
  ASSERT_TRUE(hb);
  EXPECT_EQ(hb->revision, 300);
  EXPECT_EQ(hb->checked_at_micros, 1795000009000000);
  EXPECT_NE(read_file(dir / "store/changelog/c1/heartbeat.json").find("\"checkedAt\":\"2026-11-18T"), std::string::npos);

  LogChain chain;  // a snapshot at 200, segments to 300, the last received at ms 1795000005000
  chain.from_revision = 200;
  chain.reaches = 300;
  chain.reaches_observed_ms = 1795000005000;
  EXPECT_EQ(complete_until_micros(chain, std::nullopt), 1795000005000000);
  EXPECT_EQ(complete_until_micros(chain, hb), 1795000009000000);            // quiet since revision 300
  EXPECT_EQ(complete_until_micros(chain, Heartbeat{301, 1795000009000000}),  // 301 is not in the chain
            1795000005000000);
  EXPECT_EQ(complete_until_micros(chain, Heartbeat{150, 1795000009000000}),  // before the snapshot
            1795000005000000);
  LogChain bare;  // a snapshot at 300 and a quiet cluster since
  bare.from_revision = bare.reaches = 300;
  EXPECT_EQ(complete_until_micros(bare, hb), 1795000009000000);

  // A damaged heartbeat only stops proving: it is ignored, never an error.
  write_file_atomic(dir / "store/changelog/c1/heartbeat.json", "{not json", 0600, /*overwrite=*/true);
  EXPECT_FALSE(read_heartbeat(store, "c1"));
}

// Where a running capture stands (what a NOSPACE recovery's compaction must not pass): the newest
// segment or heartbeat received within the window; nothing for a store not written yet, or a log
// whose capture stopped long ago.
TEST(ChangeLogHeartbeat, ALiveCaptureStandsAtTheNewestRecentSegmentOrHeartbeat) {
  test::TempDir dir;
  LocalStore missing(dir / "nowhere");
  EXPECT_EQ(live_capture_revision(missing, "cdf818194e3a8c32", 1795000000300000, std::chrono::minutes(15)), 0);
  LocalStore store(dir / "store");
  write_segment(store, 100, 200);  // its last revision received at 1795000000200 ms
  const int64_t now = 1795000000200000 + 60000000;  // a minute later
  EXPECT_EQ(live_capture_revision(store, "cdf818194e3a8c32", now, std::chrono::minutes(15)), 200);
  EXPECT_EQ(live_capture_revision(store, "cdf818194e3a8c32", now, std::chrono::seconds(30)), 0) << "stopped";
  write_heartbeat(store, "cdf818194e3a8c32", Heartbeat{250, now - 1000000});
  EXPECT_EQ(live_capture_revision(store, "cdf818194e3a8c32", now, std::chrono::seconds(30)), 250);
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

TEST(ChangeLogReadAhead, RecordsComeInChainOrderWhateverTheWorkersFinishFirst) {
  test::TempDir dir;
  LocalStore store(dir.path());
  std::vector<SegmentName> chain;
  for (int64_t first = 1; first <= 400; first += 40) chain.push_back(write_segment(store, first, first + 39, Compression::kZstd));
  // Bounds of one record per segment (every record is larger) and of plenty.
  for (uint64_t bytes : {uint64_t{1}, uint64_t{1} << 20}) {
    for (size_t threads : {1, 3, 8}) {
      SegmentReadAhead ahead(BackupStore(store), chain, chain, threads, threads + 1, bytes);
      int64_t expect = 1;
      while (auto r = ahead.next()) {
        ASSERT_EQ(r->revision, expect++) << threads << " workers, " << bytes << " bytes";
        EXPECT_TRUE(r->defect.empty());
      }
      EXPECT_EQ(expect, 401) << threads << " workers";
      EXPECT_EQ(ahead.segments_begun(), chain.size());
      EXPECT_FALSE(ahead.next());
    }
  }
}

TEST(ChangeLogReadAhead, ADamagedSegmentFailsOnlyWhenItsTurnComes) {
  test::TempDir dir;
  LocalStore store(dir.path());
  std::vector<SegmentName> chain;
  for (int64_t first = 1; first <= 100; first += 20) chain.push_back(write_segment(store, first, first + 19));
  std::string path = dir / chain[3].key();
  std::string bytes = read_file(path);
  bytes[bytes.size() / 2] ^= 0x01;
  write_file_atomic(path, bytes, 0600);
  {
    SegmentReadAhead ahead(BackupStore(store), chain, chain, 4, 8, 1 << 20);
    for (int64_t rev = 1; rev <= 60; ++rev) {
      auto r = ahead.next();
      ASSERT_TRUE(r) << "revision " << rev << " is in a whole segment";
      EXPECT_EQ(r->revision, rev);
    }
    std::string m = message_of([&] { ahead.next(); });
    EXPECT_NE(m.find(chain[3].key()), std::string::npos) << m;
    EXPECT_NE(m.find("SHA-256"), std::string::npos) << m;
    EXPECT_EQ(ahead.segments_begun(), 4u);
  }
  {
    // A reader that stops before the damaged one (a target reached) hears nothing of it, and the
    // workers, some of them waiting for room, are stopped when it goes.
    SegmentReadAhead ahead(BackupStore(store), chain, chain, 4, 8, 1);
    EXPECT_TRUE(ahead.next());
  }
}

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

}  // namespace etcdadm::changelog

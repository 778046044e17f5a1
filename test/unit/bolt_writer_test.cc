// BoltUpdate (the copy-on-write bbolt writer of the native restore) on copies of a real etcd
// 3.4.23 snapshot (test/data/snapshots/small.db): what it writes reads back through BoltReader,
// everything it did not touch is unchanged, and bbolt's own Tx.Check() (the datadir-oracle test
// tool, built from bbolt's Go package) finds nothing wrong, also after a further bbolt write
// transaction on our output. LogReplay (the point-in-time replay's writer, committing batches on a
// thread of its own) on the same file.
#include "etcd/datadir/bolt_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "common/error.h"
#include "common/subprocess.h"
#include "etcd/datadir/mvcc.h"
#include "restore/log_replay.h"
#include "test/support/object_servers.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

const std::string kSmall = std::string(ETCDADM_SOURCE_DIR) + "/test/data/snapshots/small.db";
constexpr uint64_t kSmallDbBytes = 69632;  // 17 pages of 4096; the SHA-256 trailer follows

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using Bucket = std::map<std::string, std::string>;
using Contents = std::map<std::string, Bucket>;

Contents dump(const std::string& path) {
  auto r = BoltReader::open(path);
  Contents c;
  std::vector<std::string> names;
  r->for_each({}, [&](std::string_view k, std::string_view, bool is_bucket) {
    EXPECT_TRUE(is_bucket) << k;
    names.emplace_back(k);
    return true;
  });
  for (const std::string& name : names) {
    Bucket& b = c[name];
    r->for_each({name}, [&](std::string_view k, std::string_view v, bool) {
      b.emplace(k, v);
      return true;
    });
  }
  return c;
}

// bbolt's Tx.Check() on the file, and again after a bbolt write transaction on a copy of it.
void expect_bbolt_accepts(const std::string& path) {
  auto r = run_process({test::go_test_tool("datadir-oracle"), "check-db", path, "--write"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

class BoltWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.path() + "/db";
    std::filesystem::copy_file(kSmall, db_);
    before_ = dump(db_);
  }
  test::TempDir dir_;
  std::string db_;
  Contents before_;
};

TEST_F(BoltWriter, ReplacesSmallBucketsAndPutsKeysLeavingTheRestAlone) {
  BoltUpdate u(db_, kSmallDbBytes);
  EXPECT_EQ(u.meta_before().txid, 114u);
  Bucket members = {{"1a2b", R"({"id":6699,"peerURLs":["http://127.0.0.1:2380"],"name":"m1"})"}};
  u.replace_bucket("members", members);
  u.replace_bucket("members_removed", {});
  u.put("meta", "consistent_index", std::string("\0\0\0\0\0\0\0\1", 8));
  u.put("meta", "term", std::string("\0\0\0\0\0\0\0\1", 8));
  u.put("brand-new", "k", "v");
  u.commit();

  EXPECT_EQ(std::filesystem::file_size(db_) % 4096, 0u) << "the SHA-256 trailer is cut off";
  auto r = BoltReader::open(db_);
  EXPECT_EQ(r->meta().txid, 115u);
  EXPECT_EQ(r->meta().meta_page, 1);
  EXPECT_EQ(r->meta().freelist_pgid, 0xFFFFFFFFFFFFFFFFULL);
  EXPECT_GT(r->meta().high_water_pgid, 17u);

  Contents after = dump(db_);
  Contents expected = before_;
  expected["members"] = members;
  expected["members_removed"] = {};
  expected["meta"]["consistent_index"] = std::string("\0\0\0\0\0\0\0\1", 8);
  expected["meta"]["term"] = std::string("\0\0\0\0\0\0\0\1", 8);
  expected["brand-new"] = {{"k", "v"}};
  EXPECT_EQ(after, expected);
  expect_bbolt_accepts(db_);
}

TEST_F(BoltWriter, GrowsTheKeyBucketThroughSplitsAndKeepsOrder) {
  // 3000 keys of ~120 bytes: the bucket grows from a few pages to a three-level tree; half the
  // keys sort before the existing ones, half after, so both edges of the tree are rewritten.
  BoltUpdate u(db_, kSmallDbBytes);
  Bucket added;
  for (int i = 0; i < 3000; ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "%c%08d", i % 2 ? '\xff' : '\x00', i);
    added[std::string(key, 9)] = std::string(100 + i % 50, static_cast<char>('a' + i % 26));
  }
  for (const auto& [k, v] : added) u.put("key", k, v);
  u.commit();
  Contents after = dump(db_);
  Contents expected = before_;
  for (const auto& [k, v] : added) expected["key"][k] = v;
  EXPECT_EQ(after, expected);
  expect_bbolt_accepts(db_);

  // A second update on our own output: the metas alternate and small changes stay small.
  uint64_t size = std::filesystem::file_size(db_);
  BoltUpdate again(db_);
  again.put("key", std::string(17, '\xfe'), "");
  again.commit();
  EXPECT_EQ(BoltReader::open(db_)->meta().txid, 116u);
  EXPECT_LE(std::filesystem::file_size(db_) - size, 8u * 4096) << "only the path to one leaf is rewritten";
  expected["key"][std::string(17, '\xfe')] = "";
  EXPECT_EQ(dump(db_), expected);
  expect_bbolt_accepts(db_);
}

TEST_F(BoltWriter, AppendedKeysInRunsOfCommitsWithoutSyncsMakeTheTreeBboltReads) {
  // A replay's shape: keys after every existing one, in order, ~20 MiB over three updates that do
  // not sync (each writes its new pages in several runs), then a put elsewhere in the same update.
  Bucket expected_keys = before_["key"];
  uint64_t n = 0;
  for (int update = 0; update < 3; ++update) {
    BoltUpdate u(db_, update == 0 ? kSmallDbBytes : 0, BoltSync::kDeferred);
    for (int i = 0; i < 4000; ++i, ++n) {
      std::string key(17, '\xf0');
      for (int b = 0; b < 8; ++b) key[9 + b] = static_cast<char>(n >> (56 - 8 * b));
      std::string value(1200 + n % 700, static_cast<char>('a' + n % 26));
      expected_keys[key] = value;
      u.append("key", key, value);
    }
    u.put("lease", "lease-" + std::to_string(update), "ttl");
    u.commit();
  }
  Contents expected = before_;
  expected["key"] = expected_keys;
  for (int update = 0; update < 3; ++update) expected["lease"]["lease-" + std::to_string(update)] = "ttl";
  EXPECT_EQ(dump(db_), expected);
  EXPECT_EQ(BoltReader::open(db_)->meta().txid, 117u);
  expect_bbolt_accepts(db_);
}

TEST_F(BoltWriter, AppendsOutOfOrderOrMixedWithPutsAreRefused) {
  BoltUpdate u(db_, kSmallDbBytes);
  u.append("key", "b", "1");
  EXPECT_THROW(u.append("key", "b", "2"), Error);
  EXPECT_THROW(u.append("key", "a", "2"), Error);
  EXPECT_THROW(u.put("key", "c", "2"), Error);
  EXPECT_THROW(u.replace_bucket("key", {}), Error);
  u.put("meta", "x", "y");
  EXPECT_THROW(u.append("meta", "z", "y"), Error);
}

TEST_F(BoltWriter, BucketsMoveBetweenInlineAndPagesAsBboltWould) {
  Bucket big;
  for (int i = 0; i < 40; ++i) big["member-" + std::to_string(i)] = std::string(200, 'x');
  {
    BoltUpdate u(db_, kSmallDbBytes);
    u.replace_bucket("members", big);  // > pageSize / 4: pages of its own
    u.commit();
  }
  EXPECT_EQ(dump(db_)["members"], big);
  expect_bbolt_accepts(db_);
  {
    BoltUpdate u(db_);
    u.replace_bucket("members", {{"a", "b"}});  // small again: inline
    u.commit();
  }
  auto r = BoltReader::open(db_);
  r->for_each({}, [&](std::string_view k, std::string_view v, bool) {
    if (k == "members") {
      EXPECT_EQ(std::string(v.substr(0, 8)), std::string(8, '\0')) << "inline bucket: root 0";
    }
    return true;
  });
  EXPECT_EQ(dump(db_)["members"], (Bucket{{"a", "b"}}));
  expect_bbolt_accepts(db_);
}

TEST_F(BoltWriter, ACorruptTreeIsRefusedBeforeAnythingIsWritten) {
  // The root page's first element points its key far outside the page (the first two words of an
  // element are a branch's pos or a leaf's flags and pos).
  std::string bytes = read_all(db_);
  const size_t root = 13 * 4096;
  uint32_t far = 0x7FFFFFFF;
  std::memcpy(bytes.data() + root + 16, &far, 4);
  std::memcpy(bytes.data() + root + 20, &far, 4);
  {
    std::ofstream out(db_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  BoltUpdate u(db_, kSmallDbBytes);
  u.replace_bucket("members", {{"a", "b"}});
  u.put("key", std::string(17, '\xfe'), "");
  try {
    u.commit();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << e.what();
  }
  EXPECT_EQ(read_all(db_), bytes) << "nothing written";
}

TEST_F(BoltWriter, DamagedPagesGiveErrorsNeverCrashes) {
  // 400 copies of the snapshot, each with a few random bytes of one random page (meta pages
  // included) overwritten: an update either commits a db the reader opens, or throws Error.
  const std::string pristine = read_all(kSmall);
  std::mt19937 rng(13);
  int refused = 0;
  for (int i = 0; i < 400; ++i) {
    std::string bytes = pristine;
    size_t page = rng() % 17;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 8); ++k) bytes[page * 4096 + rng() % 4096] = static_cast<char>(rng());
    {
      std::ofstream out(db_, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    try {
      BoltUpdate u(db_, kSmallDbBytes);
      u.replace_bucket("members", {{"a", "b"}});
      u.put("meta", "consistent_index", std::string(8, '\1'));
      u.put("key", std::string(17, '\x7f'), "");
      u.commit();
      BoltReader::open(db_)->get({"members"}, "a");
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0) << "no damage was noticed at all: the test does not reach the checks";
}

// A record of `rev` as prepare_record makes it: one key of (rev, 0) and its value.
PreparedRecord record_of(int64_t rev, size_t value_bytes) {
  PreparedRecord p;
  p.revision = rev;
  p.events = 1;
  p.keys.emplace_back(revision_key(rev, 0), std::string(value_bytes, static_cast<char>('a' + rev % 26)));
  p.bytes = p.keys.back().first.size() + value_bytes;
  return p;
}

TEST_F(BoltWriter, AReplayCommitsItsBatchesOnAnotherThreadIntoTheTreeBboltReads) {
  // ~14 MiB of records: several batches, handed over while the one before is being written.
  const int64_t snap = store_revision(*BoltReader::open(db_, kSmallDbBytes));
  Bucket expected_keys = before_["key"];
  {
    LogReplay replay(db_, kSmallDbBytes, snap);
    for (int64_t rev = snap + 1; rev <= snap + 7000; ++rev) {
      PreparedRecord r = record_of(rev, 1500 + rev % 600);
      expected_keys[r.keys[0].first] = r.keys[0].second;
      replay.apply(std::move(r));
    }
    EXPECT_THROW(replay.apply(record_of(snap + 7002, 10)), Error) << "a revision skipped";
    replay.finish();
    EXPECT_EQ(replay.revision(), snap + 7000);
    EXPECT_EQ(replay.events(), 7000u);
  }
  Contents expected = before_;
  expected["key"] = expected_keys;
  EXPECT_EQ(dump(db_), expected);
  EXPECT_EQ(std::filesystem::file_size(db_) % 4096, 0u) << "the trailer is cut";
  expect_bbolt_accepts(db_);
}

TEST_F(BoltWriter, AReplayWhoseCommitFailsSaysSoAndNeverHangs) {
  // The key bucket's root page damaged (as in ACorruptTreeIsRefusedBeforeAnythingIsWritten): the
  // first commit, on the committer thread, fails; the error reaches the caller.
  std::string bytes = read_all(db_);
  uint32_t far = 0x7FFFFFFF;
  std::memcpy(bytes.data() + 13 * 4096 + 16, &far, 4);
  std::memcpy(bytes.data() + 13 * 4096 + 20, &far, 4);
  {
    std::ofstream out(db_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const int64_t snap = 1000;
  {
    LogReplay replay(db_, kSmallDbBytes, snap);
    try {
      for (int64_t rev = snap + 1; rev <= snap + 20000; ++rev) replay.apply(record_of(rev, 2000));
      replay.finish();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << e.what();
    }
  }
  std::filesystem::copy_file(kSmall, db_, std::filesystem::copy_options::overwrite_existing);
  {
    // Given up without finish(), batches pending: the destructor waits for the commit under way.
    LogReplay replay(db_, kSmallDbBytes, snap);
    for (int64_t rev = snap + 1; rev <= snap + 5000; ++rev) replay.apply(record_of(rev, 2000));
  }
  {
    // Nothing applied and no finish(): nothing to wait for.
    LogReplay replay(db_, kSmallDbBytes, snap);
  }
}

}  // namespace
}  // namespace etcdadm

// BoltReader against a real etcd 3.4.23 snapshot (test/data/snapshots/small.db, see the README
// there for how it was made and what etcdctl said about it), hand-built bbolt images for inline and
// nested buckets, and corrupt inputs: every one must give Error(kCorrupt), never a crash.
#include "etcd/datadir/bolt_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <tuple>

#include "common/crc32c.h"
#include "common/error.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

const std::string kSmall = std::string(ETCDADM_SOURCE_DIR) + "/test/data/snapshots/small.db";
constexpr uint32_t kPs = 4096;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <typename T>
T get_le(const std::string& s, size_t off) {
  T v;
  std::memcpy(&v, s.data() + off, sizeof v);
  return v;
}

template <typename T>
void put_le(std::string& s, size_t off, T v) {
  std::memcpy(s.data() + off, &v, sizeof v);
}

uint64_t fnv1a64(const char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ULL;
  return h;
}

// Rewrites the checksum of the meta on the page starting at `page_off`.
void reseal_meta(std::string& db, size_t page_off) {
  put_le<uint64_t>(db, page_off + 16 + 56, fnv1a64(db.data() + page_off + 16, 56));
}

// Everything the reader can reach: every bucket, recursively, with get() on each key. Returns the
// number of key/value entries seen.
size_t walk_all(const BoltReader& r, std::vector<std::string>& path, int nesting = 0) {
  size_t n = 0;
  std::vector<std::string> buckets, keys;
  r.for_each(path, [&](std::string_view k, std::string_view, bool is_bucket) {
    (is_bucket ? buckets : keys).emplace_back(k);
    if (!is_bucket) ++n;
    return true;
  });
  for (size_t i = 0; i < keys.size() && i < 4; ++i) r.get(path, keys[i]);
  if (nesting >= 8) return n;
  for (const std::string& b : buckets) {
    path.push_back(b);
    n += walk_all(r, path, nesting + 1);
    path.pop_back();
  }
  return n;
}

size_t walk_all(const BoltReader& r) {
  std::vector<std::string> path;
  return walk_all(r, path);
}

template <typename F>
void expect_corrupt(F&& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(": page "), std::string::npos) << what << ": " << e.what();
  }
}

// Opens `bytes` and walks everything.
void open_and_walk(const std::string& bytes) {
  auto r = BoltReader::open_memory(bytes);
  walk_all(*r);
}

// The root page of a top-level bucket of the small snapshot.
uint64_t bucket_root(const BoltReader& r, const std::string& name) {
  uint64_t root = 0;
  r.for_each({}, [&](std::string_view k, std::string_view v, bool is_bucket) {
    if (k == name && is_bucket) std::memcpy(&root, v.data(), 8);
    return true;
  });
  return root;
}

TEST(BoltReader, SmallSnapshotMeta) {
  auto r = BoltReader::open(kSmall);
  const BoltMeta& m = r->meta();
  EXPECT_EQ(m.page_size, 4096u);
  EXPECT_EQ(m.version, 2u);
  EXPECT_EQ(m.txid, 114u);
  EXPECT_EQ(m.meta_page, 0);
  EXPECT_EQ(m.high_water_pgid, 17u);
  EXPECT_EQ(m.root_pgid, 13u);
  EXPECT_EQ(m.freelist_pgid, 0xFFFFFFFFFFFFFFFFULL);
  EXPECT_EQ(r->total_size(), 69632u);  // etcdctl snapshot status: totalSize
}

TEST(BoltReader, SmallSnapshotBucketsAndCounts) {
  auto r = BoltReader::open(kSmall);
  std::vector<std::string> top;
  r->for_each({}, [&](std::string_view k, std::string_view, bool is_bucket) {
    EXPECT_TRUE(is_bucket) << k;
    top.emplace_back(k);
    return true;
  });
  EXPECT_EQ(top, (std::vector<std::string>{"alarm", "auth", "authRoles", "authUsers", "cluster", "key", "lease",
                                           "members", "members_removed", "meta"}));

  // etcdctl's hash, totalKey and revision, recomputed from a walk (see snapshot-format.md).
  uint32_t crc = 0;
  size_t total = 0, in_key = 0;
  std::string last_key, prev;
  for (const std::string& b : top) {
    crc = crc32c_update(crc, b);
    r->for_each({b}, [&](std::string_view k, std::string_view v, bool is_bucket) {
      EXPECT_FALSE(is_bucket);
      crc = crc32c_update(crc, k);
      crc = crc32c_update(crc, v);
      ++total;
      if (b == "key") {
        ++in_key;
        EXPECT_LT(prev, std::string(k));
        prev = std::string(k);
        last_key = std::string(k);
      }
      return true;
    });
  }
  EXPECT_EQ(crc, 1097456376u);
  EXPECT_EQ(total, 336u);
  EXPECT_EQ(in_key, 331u);
  ASSERT_EQ(last_key.size(), 17u);
  uint64_t rev = 0;
  for (int i = 0; i < 8; ++i) rev = rev << 8 | static_cast<unsigned char>(last_key[i]);
  EXPECT_EQ(rev, 332u);
  EXPECT_EQ(walk_all(*r), 336u);
}

TEST(BoltReader, GetAndHasBucket) {
  auto r = BoltReader::open(kSmall);
  EXPECT_EQ(r->get({"cluster"}, "clusterVersion"), std::optional<std::string>("3.4.0"));
  EXPECT_TRUE(r->has_bucket({"key"}));
  EXPECT_TRUE(r->has_bucket({}));
  EXPECT_FALSE(r->has_bucket({"nope"}));
  EXPECT_FALSE(r->has_bucket({"cluster", "clusterVersion"}));  // a key, not a bucket
  EXPECT_EQ(r->get({}, "key"), std::nullopt);                  // a bucket, not a value
  EXPECT_EQ(r->get({"cluster"}, "nope"), std::nullopt);
  try {
    r->for_each({"nope"}, [](std::string_view, std::string_view, bool) { return true; });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
  // Every key of `key` is found by get(), through the branch page.
  std::vector<std::pair<std::string, std::string>> all;
  r->for_each({"key"}, [&](std::string_view k, std::string_view v, bool) {
    all.emplace_back(k, v);
    return true;
  });
  for (const auto& [k, v] : all) EXPECT_EQ(r->get({"key"}, k), std::optional<std::string>(v));
  // A visitor that returns false stops the walk.
  int seen = 0;
  r->for_each({"key"}, [&](std::string_view, std::string_view, bool) { return ++seen < 5; });
  EXPECT_EQ(seen, 5);
}

TEST(BoltReader, TrailerIncludedOrExcludedAndMemory) {
  const std::string bytes = read_all(kSmall);
  ASSERT_EQ(bytes.size(), 69632u + 32u);
  auto whole = BoltReader::open(kSmall);
  auto trimmed = BoltReader::open(kSmall, bytes.size() - 32);
  auto mem = BoltReader::open_memory(bytes, bytes.size() - 32);
  EXPECT_EQ(trimmed->total_size(), whole->total_size());
  EXPECT_EQ(walk_all(*trimmed), 336u);
  EXPECT_EQ(walk_all(*mem), 336u);
  EXPECT_EQ(mem->meta().txid, 114u);
  // One byte less than meta.pgid * pageSize: the database does not fit.
  expect_corrupt([&] { BoltReader::open(kSmall, 69632 - 1); }, "limit below total size");
}

// Every entry of every top-level bucket, hashed in walk order.
uint32_t hash_everything(const BoltReader& r) {
  Crc32c h;
  std::vector<std::string> buckets;
  r.for_each({}, [&](std::string_view k, std::string_view, bool) {
    buckets.emplace_back(k);
    return true;
  });
  for (const auto& b : buckets) {
    h.update(b);
    r.for_each({b}, [&](std::string_view k, std::string_view v, bool) {
      h.update(k);
      h.update(v);
      return true;
    });
  }
  return h.value();
}

// The file reader serves sequential page reads from a read-ahead window: interleaving walks with
// lookups elsewhere (which break the sequence) must see the same bytes as the in-memory reader.
TEST(BoltReader, ReadAheadMatchesMemoryReader) {
  const std::string bytes = read_all(kSmall);
  auto file = BoltReader::open(kSmall, bytes.size() - 32);
  auto mem = BoltReader::open_memory(bytes, bytes.size() - 32);
  const uint32_t want = hash_everything(*mem);
  EXPECT_EQ(hash_everything(*file), want);
  std::vector<std::string> keys;
  mem->for_each({"key"}, [&](std::string_view k, std::string_view, bool) {
    keys.emplace_back(k);
    return true;
  });
  ASSERT_FALSE(keys.empty());
  std::mt19937_64 rng(7);
  size_t seen = 0;
  file->for_each({"key"}, [&](std::string_view k, std::string_view v, bool) {
    const std::string& other = keys[rng() % keys.size()];
    EXPECT_EQ(file->get({"key"}, other), mem->get({"key"}, other));
    EXPECT_EQ(mem->get({"key"}, k), std::string(v));
    ++seen;
    return true;
  });
  EXPECT_EQ(seen, keys.size());
  EXPECT_EQ(hash_everything(*file), want);
}

TEST(BoltReader, MetaFallbackAndBothBad) {
  const std::string good = read_all(kSmall);
  std::string db = good;
  db[16 + 30] ^= 0x40;  // meta 0 body
  auto r = BoltReader::open_memory(db);
  EXPECT_EQ(r->meta().meta_page, 1);
  EXPECT_EQ(r->meta().txid, 113u);
  EXPECT_EQ(walk_all(*r), 336u);

  db = good;
  db[kPs + 16 + 50] ^= 0x01;  // meta 1 body
  r = BoltReader::open_memory(db);
  EXPECT_EQ(r->meta().meta_page, 0);
  EXPECT_EQ(r->meta().txid, 114u);

  db = good;
  db[16] ^= 0xFF;       // meta 0 magic
  db[kPs + 8] ^= 0x04;  // meta 1 page flags
  expect_corrupt([&] { BoltReader::open_memory(db); }, "both metas");
  db = good;
  db[16 + 56 + 3] ^= 0x10;   // meta 0 checksum
  db[kPs + 16 + 4] ^= 0x01;  // meta 1 version
  expect_corrupt([&] { BoltReader::open_memory(db); }, "both metas (checksum, version)");
}

// Sets a field of meta `which` (offset in the meta body) and rewrites its checksum.
template <typename T>
void set_meta_field(std::string& db, int which, size_t body_off, T v) {
  put_le<T>(db, which * kPs + 16 + body_off, v);
  reseal_meta(db, which * kPs);
}

TEST(BoltReader, WrongPageSizeInMeta) {
  const std::string good = read_all(kSmall);
  constexpr size_t kPageSizeField = 8, kPgidField = 40;
  // 8192 in both metas, checksums valid: 17 pages of 8 KiB do not fit; meta 1 is not at 8192.
  std::string db = good;
  set_meta_field<uint32_t>(db, 0, kPageSizeField, 8192);
  set_meta_field<uint32_t>(db, 1, kPageSizeField, 8192);
  expect_corrupt([&] { BoltReader::open_memory(db); }, "page size 8192");
  // 1024 in meta 0 only: it opens (17 KiB fit) but the tree pages are not where the meta says.
  db = good;
  set_meta_field<uint32_t>(db, 0, kPageSizeField, 1024);
  expect_corrupt([&] { open_and_walk(db); }, "page size 1024");
  // Implausible page sizes.
  db = good;
  set_meta_field<uint32_t>(db, 0, kPageSizeField, 100);
  set_meta_field<uint32_t>(db, 1, kPageSizeField, 3000);
  expect_corrupt([&] { BoltReader::open_memory(db); }, "page size 100/3000");
  // meta.pgid beyond the file.
  db = good;
  set_meta_field<uint64_t>(db, 0, kPgidField, 1000);
  set_meta_field<uint64_t>(db, 1, kPgidField, 18);
  expect_corrupt([&] { BoltReader::open_memory(db); }, "high-water beyond the file");
}

TEST(BoltReader, CorruptBranchAndLeafPages) {
  const std::string good = read_all(kSmall);
  auto r = BoltReader::open_memory(good);
  const uint64_t branch = bucket_root(*r, "key");
  ASSERT_EQ(get_le<uint16_t>(good, branch * kPs + 8), 0x01) << "the key bucket's root should be a branch";
  const uint64_t leaf = get_le<uint64_t>(good, branch * kPs + 16 + 8);  // its first child
  ASSERT_EQ(get_le<uint16_t>(good, leaf * kPs + 8), 0x02);
  const size_t b = branch * kPs, l = leaf * kPs;
  auto key_walk = [](const std::string& db) {
    auto rr = BoltReader::open_memory(db);
    rr->for_each({"key"}, [](std::string_view, std::string_view, bool) { return true; });
  };
  std::vector<std::pair<std::string, std::function<void(std::string&)>>> cases = {
      {"branch count", [&](std::string& d) { put_le<uint16_t>(d, b + 10, 0xFFFF); }},
      {"branch count 0", [&](std::string& d) { put_le<uint16_t>(d, b + 10, 0); }},
      {"branch key pos", [&](std::string& d) { put_le<uint32_t>(d, b + 16, 0xFFFFFFF0); }},
      {"branch key size", [&](std::string& d) { put_le<uint32_t>(d, b + 16 + 4, 5000); }},
      {"branch child = high-water", [&](std::string& d) { put_le<uint64_t>(d, b + 16 + 8, 17); }},
      {"branch child far beyond", [&](std::string& d) { put_le<uint64_t>(d, b + 16 + 8, 1ULL << 62); }},
      {"branch child = meta page", [&](std::string& d) { put_le<uint64_t>(d, b + 16 + 8, 1); }},
      {"branch child = itself", [&](std::string& d) { put_le<uint64_t>(d, b + 16 + 8, branch); }},
      {"branch flags", [&](std::string& d) { put_le<uint16_t>(d, b + 8, 0x10); }},
      {"branch id", [&](std::string& d) { put_le<uint64_t>(d, b, branch + 1); }},
      {"branch overflow", [&](std::string& d) { put_le<uint32_t>(d, b + 12, 0xFFFFFFFF); }},
      {"branch overflow past high-water", [&](std::string& d) { put_le<uint32_t>(d, b + 12, 17 - branch); }},
      {"leaf count", [&](std::string& d) { put_le<uint16_t>(d, l + 10, 300); }},
      {"leaf key pos", [&](std::string& d) { put_le<uint32_t>(d, l + 16 + 4, 0x7FFFFFFF); }},
      {"leaf value size", [&](std::string& d) { put_le<uint32_t>(d, l + 16 + 12, 0xFFFFFFFF); }},
      {"leaf key size", [&](std::string& d) { put_le<uint32_t>(d, l + 16 + 8, 4090); }},
      {"leaf flags meta", [&](std::string& d) { put_le<uint16_t>(d, l + 8, 0x04); }},
      {"leaf id", [&](std::string& d) { put_le<uint64_t>(d, l, 0); }},
      {"leaf keys out of order", [&](std::string& d) { d[l + get_le<uint32_t>(d, l + 16 + 4) + 16] = '\x7F'; }},
  };
  for (auto& [name, mutate] : cases) {
    std::string db = good;
    mutate(db);
    expect_corrupt([&] { key_walk(db); }, name);
  }
}

TEST(BoltReader, TruncatedZeroAndGarbageFiles) {
  const std::string good = read_all(kSmall);
  for (size_t n : {size_t{0}, size_t{1}, size_t{79}, size_t{80}, size_t{kPs}, size_t{kPs + 80}, size_t{2 * kPs},
                   size_t{13 * kPs}, size_t{69632 - 4096}, size_t{69632 - 1}}) {
    expect_corrupt([&] { open_and_walk(good.substr(0, n)); }, "truncated at " + std::to_string(n));
  }
  test::TempDir dir;
  write_all(dir / "empty.db", "");
  expect_corrupt([&] { BoltReader::open(dir / "empty.db"); }, "zero-length file");
  write_all(dir / "cut.db", good.substr(0, 5 * kPs + 123));
  expect_corrupt([&] { BoltReader::open(dir / "cut.db"); }, "truncated file");

  std::mt19937_64 rng(42);
  std::string garbage(70000, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  write_all(dir / "garbage.db", garbage);
  expect_corrupt([&] { BoltReader::open(dir / "garbage.db"); }, "random garbage");
  // Garbage behind two valid metas.
  std::string mixed = good.substr(0, 2 * kPs) + garbage.substr(0, good.size() - 2 * kPs);
  expect_corrupt([&] { open_and_walk(mixed); }, "garbage pages");

  try {
    BoltReader::open(dir / "missing.db");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
}

// Every single-byte mutation either reads fine or gives an Error; corruption in a page gives
// kCorrupt (kNotFound is possible only when a bucket name itself was changed).
TEST(BoltReader, RandomSingleByteMutations) {
  const std::string good = read_all(kSmall);
  std::mt19937_64 rng(20261121);
  int ok = 0, corrupt = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string db = good;
    size_t off = rng() % 69632;
    uint8_t x = static_cast<uint8_t>(rng() % 255 + 1);
    db[off] = static_cast<char>(db[off] ^ x);
    try {
      open_and_walk(db);
      ++ok;
    } catch (const Error& e) {
      EXPECT_TRUE(e.kind() == ErrorKind::kCorrupt || e.kind() == ErrorKind::kNotFound)
          << "offset " << off << ": " << e.what();
      ++corrupt;
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(corrupt, 0);
}

// Hand-built bbolt images: page images are built as strings and laid out at page offsets.
struct Elem {
  uint32_t flags;
  std::string key, value;
  uint64_t child = 0;  // branch elements
};

// A node image: 16-byte header, elements, then keys/values.
std::string node_image(uint16_t flags, uint64_t id, const std::vector<Elem>& elems) {
  std::string img(16 + 16 * elems.size(), '\0');
  put_le<uint64_t>(img, 0, id);
  put_le<uint16_t>(img, 8, flags);
  put_le<uint16_t>(img, 10, static_cast<uint16_t>(elems.size()));
  for (size_t i = 0; i < elems.size(); ++i) {
    const size_t e = 16 + 16 * i;
    const uint32_t pos = static_cast<uint32_t>(img.size() - e);
    if (flags == 0x01) {
      put_le<uint32_t>(img, e, pos);
      put_le<uint32_t>(img, e + 4, static_cast<uint32_t>(elems[i].key.size()));
      put_le<uint64_t>(img, e + 8, elems[i].child);
      img += elems[i].key;
    } else {
      put_le<uint32_t>(img, e, elems[i].flags);
      put_le<uint32_t>(img, e + 4, pos);
      put_le<uint32_t>(img, e + 8, static_cast<uint32_t>(elems[i].key.size()));
      put_le<uint32_t>(img, e + 12, static_cast<uint32_t>(elems[i].value.size()));
      img += elems[i].key + elems[i].value;
    }
  }
  return img;
}

std::string bucket_value(uint64_t root, const std::string& inline_image = {}) {
  std::string v(16, '\0');
  put_le<uint64_t>(v, 0, root);
  return v + inline_image;
}

// Pages: 0,1 metas; 2 freelist; 3 root leaf {a: inline bucket {k1,k2}, b: bucket at 4}; 4 branch
// -> 5 leaf {nested: bucket at 6, x: y}; 6 leaf {deep: 1}.
std::string synthetic_db(const std::function<void(std::vector<std::string>&)>& tweak = {}) {
  std::vector<std::string> pages(7);
  pages[2] = node_image(0x10, 2, {});
  std::string inline_leaf = node_image(0x02, 0, {{0, "k1", "v1"}, {0, "k2", "v2"}});
  pages[3] = node_image(0x02, 3, {{1, "a", bucket_value(0, inline_leaf)}, {1, "b", bucket_value(4)}});
  pages[4] = node_image(0x01, 4, {{0, "nested", "", 5}});
  pages[5] = node_image(0x02, 5, {{1, "nested", bucket_value(6)}, {0, "x", "y"}});
  pages[6] = node_image(0x02, 6, {{0, "deep", "1"}});
  if (tweak) tweak(pages);
  std::string db(pages.size() * kPs, '\0');
  for (size_t i = 2; i < pages.size(); ++i) db.replace(i * kPs, pages[i].size(), pages[i]);
  for (uint64_t m = 0; m < 2; ++m) {
    const size_t p = m * kPs;
    put_le<uint64_t>(db, p, m);
    put_le<uint16_t>(db, p + 8, 0x04);
    put_le<uint32_t>(db, p + 16, 0xED0CDAED);
    put_le<uint32_t>(db, p + 20, 2);
    put_le<uint32_t>(db, p + 24, kPs);
    put_le<uint64_t>(db, p + 32, 3);                      // root
    put_le<uint64_t>(db, p + 48, 0xFFFFFFFFFFFFFFFFULL);  // freelist
    put_le<uint64_t>(db, p + 56, pages.size());           // pgid
    put_le<uint64_t>(db, p + 64, 10 + m);                 // txid: meta 1 is newer
    reseal_meta(db, p);
  }
  return db;
}

TEST(BoltReader, InlineAndNestedBuckets) {
  auto r = BoltReader::open_memory(synthetic_db());
  EXPECT_EQ(r->meta().meta_page, 1);
  EXPECT_EQ(r->get({"a"}, "k2"), std::optional<std::string>("v2"));
  EXPECT_EQ(r->get({"b"}, "x"), std::optional<std::string>("y"));
  EXPECT_EQ(r->get({"b", "nested"}, "deep"), std::optional<std::string>("1"));
  EXPECT_TRUE(r->has_bucket({"b", "nested"}));
  EXPECT_FALSE(r->has_bucket({"a", "k1"}));
  EXPECT_EQ(walk_all(*r), 4u);
  std::vector<std::string> keys;
  r->for_each({"b"}, [&](std::string_view k, std::string_view, bool is_bucket) {
    keys.push_back(std::string(k) + (is_bucket ? "/" : ""));
    return true;
  });
  EXPECT_EQ(keys, (std::vector<std::string>{"nested/", "x"}));
}

TEST(BoltReader, CorruptInlineAndCycles) {
  // Inline leaf count larger than the value holds.
  expect_corrupt([] { open_and_walk(synthetic_db([](auto& p) { p[3][16 + 16 * 2 + 1 + 16 + 10] = 50; })); },
                 "inline count");
  // Inline image with a branch flag.
  expect_corrupt([] { open_and_walk(synthetic_db([](auto& p) { p[3][16 + 16 * 2 + 1 + 16 + 8] = 1; })); },
                 "inline flags");
  // Inline bucket value too short for the leaf header: vsize of element 0 cut to 20.
  expect_corrupt([] { open_and_walk(synthetic_db([](auto& p) { put_le<uint32_t>(p[3], 16 + 12, 20); })); },
                 "inline too short");
  // Bucket value shorter than the 16-byte bucket header.
  expect_corrupt([] { open_and_walk(synthetic_db([](auto& p) { put_le<uint32_t>(p[3], 16 + 12, 8); })); },
                 "bucket header");
  // A branch page pointing at itself: the depth / page budget stops it.
  expect_corrupt([] { open_and_walk(synthetic_db([](auto& p) { put_le<uint64_t>(p[4], 16 + 8, 4); })); },
                 "branch cycle");
  // A nested bucket whose root is the root bucket's page: each walk is finite; nesting is limited
  // by the caller (walk_all stops at 8 levels), and get() through it works.
  auto r = BoltReader::open_memory(synthetic_db([](auto& p) {
    p[6] = node_image(0x02, 6, {{1, "loop", bucket_value(4)}});
  }));
  EXPECT_NO_THROW(walk_all(*r));
  EXPECT_EQ(r->get({"b", "nested", "loop", "nested", "loop"}, "x"), std::optional<std::string>("y"));
}

}  // namespace
}  // namespace etcdadm

#include "etcd/datadir/snapshot_inspect.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "common/crc32c.h"
#include "common/error.h"
#include "common/fs.h"
#include "etcd/datadir/mvcc.h"
#include "etcd/proto/etcd.pb.h"

namespace etcdadm {

namespace {

constexpr size_t kRevisionBytes = 17;  // 8-byte BE main + '_' + 8-byte BE sub

Error corrupt(const std::string& what) {
  return Error(ErrorKind::kCorrupt, "snapshot is corrupt: " + what,
               "the file is not an intact etcd snapshot; use another backup");
}

uint64_t be64(std::string_view b) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(b[i]);
  return v;
}

std::string hex_bytes(std::string_view b) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (char c : b) {
    out.push_back(digits[static_cast<uint8_t>(c) >> 4]);
    out.push_back(digits[static_cast<uint8_t>(c) & 0xF]);
  }
  return out;
}

// A u64 stored big endian in `bucket`/`key` (etcd's meta and auth counters); nullopt when absent.
std::optional<uint64_t> get_be64(const BoltReader& db, const std::string& bucket, std::string_view key) {
  auto v = db.get({bucket}, key);
  if (!v) return std::nullopt;
  if (v->size() != 8)
    throw corrupt(bucket + "/" + std::string(key) + " is " + std::to_string(v->size()) + " bytes, not 8");
  return be64(*v);
}

// A 17-byte revision value (scheduledCompactRev, finishedCompactRev) -> its main revision.
std::optional<int64_t> get_revision(const BoltReader& db, std::string_view key) {
  auto v = db.get({"meta"}, key);
  if (!v) return std::nullopt;
  if (v->size() < 8) throw corrupt("meta/" + std::string(key) + " is too short for a revision");
  return static_cast<int64_t>(be64(*v));
}

// Main revision of a `key` bucket key.
int64_t main_revision(std::string_view k) {
  if (k.size() < kRevisionBytes) throw corrupt("key bucket entry " + hex_bytes(k) + " is not a revision");
  return static_cast<int64_t>(be64(k));
}

bool is_tombstone(std::string_view k) { return k.size() > kRevisionBytes && k[kRevisionBytes] == 't'; }

etcdserverpb::KeyValue decode_kv(std::string_view k, std::string_view v) {
  etcdserverpb::KeyValue kv;
  if (!kv.ParseFromArray(v.data(), static_cast<int>(v.size()))) {
    throw corrupt("undecodable KeyValue at revision " + std::to_string(main_revision(k)));
  }
  return kv;
}

// Varint fields 1..3 of a protobuf (leasepb.Lease: ID, TTL, RemainingTTL); other fields skipped.
std::array<int64_t, 3> decode_varint_fields(std::string_view v, const std::string& what) {
  using google::protobuf::internal::WireFormatLite;
  std::array<int64_t, 3> out{};
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(v.data()), static_cast<int>(v.size()));
  while (uint32_t tag = in.ReadTag()) {
    int field = WireFormatLite::GetTagFieldNumber(tag);
    if (field >= 1 && field <= 3 && WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT) {
      uint64_t x = 0;
      if (!in.ReadVarint64(&x)) throw corrupt("undecodable " + what);
      out[field - 1] = static_cast<int64_t>(x);
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      throw corrupt("undecodable " + what);
    }
  }
  if (!in.ConsumedEntireMessage() || in.CurrentPosition() != static_cast<int>(v.size())) {
    throw corrupt("undecodable " + what);
  }
  return out;
}

// Whether `key` lies in etcd's range [begin, end) ("" = only begin, "\0" = everything >= begin).
struct KeyRange {
  std::string begin, end;
  bool contains(const std::string& key) const {
    if (end.empty()) return key == begin;
    if (key < begin) return false;
    if (end == std::string(1, '\0')) return true;
    return key < end;
  }
};

// Scans the `key` bucket in revision order; calls `visit(kv, tombstone)` for every revision of a
// key `want` accepts (etcd's restore skips empty keys, such as a bump-revision marker).
template <typename Want, typename Visit>
void scan_revisions(const BoltReader& db, const Want& want, const Visit& visit) {
  if (!db.has_bucket({"key"})) return;
  db.for_each({"key"}, [&](std::string_view k, std::string_view v, bool is_bucket) {
    if (is_bucket) throw corrupt("nested bucket inside the key bucket");
    main_revision(k);  // validates the key shape
    etcdserverpb::KeyValue kv = decode_kv(k, v);
    if (kv.key().empty() || !want(kv.key())) return true;
    visit(kv, is_tombstone(k));
    return true;
  });
}

// The fields of an mvccpb.KeyValue that inspect needs, read straight from the wire format without
// building a message: key (1), value (5, only its length is used), lease (6). The revision fields
// (2..4) are varints and skipped like unknown fields. proto3 rules: the last occurrence of a field
// wins; a known field number with an unexpected wire type is an unknown field.
struct KvFields {
  std::string_view key;
  size_t value_size = 0;
};

bool read_varint(const char*& p, const char* end, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p == end) return false;
    auto b = static_cast<uint8_t>(*p++);
    v |= uint64_t{b & 0x7Fu} << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;  // more than 10 bytes
}

bool parse_kv_fields(std::string_view v, KvFields* out) {
  const char* p = v.data();
  const char* end = p + v.size();
  KvFields f;
  while (p != end) {
    uint64_t tag = 0;
    if (!read_varint(p, end, &tag)) return false;
    uint64_t field = tag >> 3;
    if (field == 0) return false;
    switch (tag & 7) {
      case 0: {  // varint
        uint64_t x = 0;
        if (!read_varint(p, end, &x)) return false;
        break;
      }
      case 1:  // fixed64
        if (end - p < 8) return false;
        p += 8;
        break;
      case 2: {  // length-delimited
        uint64_t len = 0;
        if (!read_varint(p, end, &len) || len > static_cast<uint64_t>(end - p)) return false;
        if (field == 1) f.key = std::string_view(p, len);
        if (field == 5) f.value_size = len;
        p += len;
        break;
      }
      case 5:  // fixed32
        if (end - p < 4) return false;
        p += 4;
        break;
      default:  // groups (never in a KeyValue) and invalid wire types
        return false;
    }
  }
  *out = f;
  return true;
}

std::string_view prefix_view(std::string_view key, int depth) {
  size_t start = (!key.empty() && key[0] == '/') ? 1 : 0;
  size_t cut = start;
  size_t pos = start;
  for (int level = 0; level < depth; ++level) {
    size_t slash = key.find('/', pos);
    if (slash == std::string_view::npos) break;
    cut = slash;
    pos = slash + 1;
  }
  return key.substr(0, cut);
}

// 128-bit (two 64-bit lanes) non-cryptographic hash of a key: the latest-state table stores 95 bits
// of it instead of the key, in a 16-byte slot (the table is 3/8 to 3/4 full), whatever the key
// length.
inline uint64_t mum(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

std::pair<uint64_t, uint64_t> hash128(std::string_view s) {
  constexpr uint64_t k0 = 0xa0761d6478bd642fULL, k1 = 0xe7037ed1a0b428dbULL, k2 = 0x8ebc6af09c88c6e3ULL,
                     k3 = 0x589965cc75374cc3ULL;
  uint64_t h1 = 0x243f6a8885a308d3ULL ^ (s.size() * k0);
  uint64_t h2 = 0x13198a2e03707344ULL ^ (s.size() * k1);
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0) {
    uint64_t w = 0;
    size_t take = n < 8 ? n : 8;
    std::memcpy(&w, p, take);
    h1 = mum(h1 ^ w, k2);
    h2 = mum(h2 ^ w ^ k0, k3) + w;
    p += take;
    n -= take;
  }
  return {mum(h1 ^ k1, h2 ^ k3), mum(h2 ^ k2, h1 ^ k0)};
}

// Open-addressing table: hashed key -> {live, key + value bytes} of its latest revision seen.
class LatestTable {
 public:
  struct Slot {
    uint64_t h1 = 0;  // 0 = empty (a real hash of 0 is stored as 1)
    uint32_t h2 = 0;  // 31 more hash bits; the top bit is the live flag
    uint32_t bytes = 0;
  };
  static constexpr uint32_t kLive = 0x80000000u;

  struct Hashed {
    uint64_t h1;
    uint32_t h2;
  };
  // Hashes `key` and prefetches its first probe slot, so that a find() a little later does not wait
  // for memory (the table is far larger than the caches).
  Hashed hash(std::string_view key) const {
    auto [a, b] = hash128(key);
    Hashed h{a == 0 ? 1 : a, static_cast<uint32_t>(b) & ~kLive};
    if (!slots_.empty()) __builtin_prefetch(&slots_[static_cast<size_t>(h.h1 >> 20) & (slots_.size() - 1)]);
    return h;
  }

  size_t size() const { return used_; }

  // The slot of a hashed key, or nullptr when the table does not hold it.
  const Slot* lookup(const Hashed& h) const {
    if (slots_.empty()) return nullptr;
    size_t mask = slots_.size() - 1;
    for (size_t i = static_cast<size_t>(h.h1 >> 20) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.h1 == 0) return nullptr;
      if (s.h1 == h.h1 && (s.h2 & ~kLive) == h.h2) return &s;
    }
  }

  // The slot of a hashed key (inserted when new: *fresh is then true).
  Slot& find(const Hashed& h, bool* fresh) {
    if ((used_ + 1) * 4 > slots_.size() * 3) grow();
    size_t mask = slots_.size() - 1;
    for (size_t i = static_cast<size_t>(h.h1 >> 20) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.h1 == 0) {
        s.h1 = h.h1;
        s.h2 = h.h2;
        ++used_;
        *fresh = true;
        return s;
      }
      if (s.h1 == h.h1 && (s.h2 & ~kLive) == h.h2) {
        *fresh = false;
        return s;
      }
    }
  }

 private:
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 4096 : old.size() * 2, Slot{});
    size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.h1 == 0) continue;
      size_t i = static_cast<size_t>(s.h1 >> 20) & mask;
      while (slots_[i].h1 != 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// One `key` bucket entry as the latest-state table sees it.
struct KeyRevision {
  uint64_t h1;
  uint32_t h2;         // without the live flag
  uint32_t bytes;      // key + value bytes (0 for a tombstone)
  uint32_t prefix;     // index of the key's prefix
  uint32_t tombstone;  // 1 for a delete
};

// The entries of the `key` bucket that come after the latest-state table reached its limit, kept
// in kSpillPartitions files by key hash (a key's entries all in one file, in revision order) in a
// private scratch directory, to be replayed one partition at a time.
class SpilledRevisions {
 public:
  static constexpr size_t kSpillPartitions = 64;

  SpilledRevisions() : dir_("etcdadm-inspect") {
    for (size_t i = 0; i < kSpillPartitions; ++i) {
      std::string path = dir_.path() + "/part-" + std::to_string(i);
      files_[i] = std::fopen(path.c_str(), "w+b");
      if (files_[i] == nullptr) throw io_error("cannot create", path);
      std::setvbuf(files_[i], nullptr, _IOFBF, 16 << 10);
    }
  }
  ~SpilledRevisions() {
    for (FILE* f : files_) {
      if (f != nullptr) std::fclose(f);
    }
  }
  SpilledRevisions(const SpilledRevisions&) = delete;
  SpilledRevisions& operator=(const SpilledRevisions&) = delete;

  void add(const KeyRevision& r) {
    if (std::fwrite(&r, sizeof r, 1, files_[r.h1 % kSpillPartitions]) != 1) throw io_error("cannot write", dir_.path());
  }

  // Calls start() before each partition and each(r) for its entries, in the order they were added.
  template <typename Start, typename Each>
  void replay(const Start& start, const Each& each) {
    std::vector<KeyRevision> chunk(4096);
    for (FILE* f : files_) {
      if (std::fflush(f) != 0 || std::fseek(f, 0, SEEK_SET) != 0) throw io_error("cannot read back", dir_.path());
      start();
      size_t n;
      while ((n = std::fread(chunk.data(), sizeof(KeyRevision), chunk.size(), f)) > 0) {
        for (size_t i = 0; i < n; ++i) each(chunk[i]);
      }
      if (std::ferror(f)) throw io_error("cannot read back", dir_.path());
    }
  }

 private:
  static Error io_error(const std::string& what, const std::string& path) {
    return Error(ErrorKind::kIo, what + " the inspection's scratch file in " + path + ": " + std::strerror(errno),
                 "free space in $TMPDIR (default /tmp): a large snapshot needs about 24 bytes per revision there");
  }
  ScratchDir dir_;
  std::array<FILE*, kSpillPartitions> files_{};
};

// The status fields, walking every bucket once; `on_key` sees each `key` bucket entry (after the
// revision check) in revision order.
template <typename OnKey>
SnapshotStatus status_walk(const BoltReader& db, const OnKey& on_key) {
  SnapshotStatus s;
  s.total_size = static_cast<int64_t>(db.total_size());
  Crc32c h;
  std::vector<std::string> buckets;
  db.for_each({}, [&](std::string_view name, std::string_view, bool is_bucket) {
    if (!is_bucket) throw corrupt("the root bucket holds a plain value " + hex_bytes(name));
    buckets.emplace_back(name);
    return true;
  });
  for (const auto& name : buckets) {
    h.update(name);
    bool key_bucket = name == "key";
    db.for_each({name}, [&](std::string_view k, std::string_view v, bool is_bucket) {
      h.update(k);
      if (!is_bucket) h.update(v);  // bolt's ForEach hands nested buckets over with a nil value
      if (key_bucket) {
        if (k.size() < 8) throw corrupt("key bucket entry " + hex_bytes(k) + " is not a revision");
        s.newest_key_revision = static_cast<int64_t>(be64(k));
        on_key(k, v, is_bucket);
      }
      ++s.total_key;
      return true;
    });
  }
  s.hash = h.value();
  if (auto v = db.has_bucket({"meta"}) ? db.get({"meta"}, "storageVersion") : std::nullopt) s.version = *v;
  s.revision = store_revision(db);
  return s;
}

}  // namespace

SnapshotStatus snapshot_status(const BoltReader& db, StatusSemantics semantics) {
  SnapshotStatus s = status_walk(db, [](std::string_view, std::string_view, bool) {});
  if (semantics == StatusSemantics::kEtcd36) {
    int64_t live = 0;
    visit_latest(db, std::string(1, '\0'), std::string(1, '\0'), [&](const SnapshotKeyValue&) { ++live; });
    s.total_key = live;
  }
  return s;
}

uint64_t snapshot_consistent_index(const BoltReader& db) {
  return db.has_bucket({"meta"}) ? get_be64(db, "meta", "consistent_index").value_or(0) : 0;
}

std::vector<SnapshotMember> snapshot_members(const BoltReader& db) {
  std::vector<SnapshotMember> members;
  if (db.has_bucket({"members"})) {
    db.for_each({"members"}, [&](std::string_view k, std::string_view v, bool is_bucket) {
      if (is_bucket) return true;
      nlohmann::json j = nlohmann::json::parse(v, nullptr, false);
      if (j.is_discarded() || !j.is_object()) throw corrupt("member " + std::string(k) + " is not JSON");
      SnapshotMember m;
      try {
        if (j.contains("id"))
          m.id = j["id"].get<uint64_t>();
        else
          m.id = std::stoull(std::string(k), nullptr, 16);
        m.name = j.value("name", "");
        if (j.contains("peerURLs") && !j["peerURLs"].is_null())
          m.peer_urls = j["peerURLs"].get<std::vector<std::string>>();
        if (j.contains("clientURLs") && !j["clientURLs"].is_null())
          m.client_urls = j["clientURLs"].get<std::vector<std::string>>();
        m.learner = j.value("isLearner", false);
      } catch (const std::exception& e) {
        throw corrupt("member " + std::string(k) + ": " + e.what());
      }
      members.push_back(std::move(m));
      return true;
    });
  }
  return members;
}

SnapshotInspection inspect_snapshot(const BoltReader& db, int prefix_depth, size_t in_memory_keys) {
  SnapshotInspection r;
  // One walk: the status hash over every bucket, and, while in `key`, each key's latest state. The
  // `key` bucket is in revision order, so a key's latest state is its last occurrence; the table
  // keeps a 128-bit hash of each key (not the key), and the per-prefix sums are kept up to date as
  // states change. Once the table holds `in_memory_keys` keys it is frozen and the rest of the
  // bucket goes to disk by key hash (SpilledRevisions); each partition is then replayed through a
  // table of its own whose new keys start from the frozen table's state. Memory stays bounded by
  // the frozen table and one partition's keys, however many keys the snapshot holds.
  LatestTable latest;
  std::optional<SpilledRevisions> spilled;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> prefix_index;
  std::deque<PrefixStat> prefixes;  // by index; a deque: references stay valid as it grows
  auto apply = [&](LatestTable& table, const LatestTable* frozen, const KeyRevision& e) {
    bool fresh = false;
    LatestTable::Slot& slot = table.find({e.h1, e.h2}, &fresh);
    if (fresh && frozen != nullptr) {
      if (const LatestTable::Slot* before = frozen->lookup({e.h1, e.h2})) {
        slot.h2 = before->h2;
        slot.bytes = before->bytes;
        fresh = false;
      }
    }
    PrefixStat& stat = prefixes[e.prefix];
    if (!fresh && (slot.h2 & LatestTable::kLive) != 0) {
      --stat.keys;
      stat.bytes -= slot.bytes;
    }
    if (e.tombstone != 0) {
      slot.h2 &= ~LatestTable::kLive;
      slot.bytes = 0;
    } else {
      slot.h2 |= LatestTable::kLive;
      slot.bytes = e.bytes;
      ++stat.keys;
      stat.bytes += e.bytes;
    }
  };
  // A revision is applied to the table one entry late: its slot is prefetched meanwhile.
  std::optional<KeyRevision> pending;
  auto take = [&](const KeyRevision& e) {
    if (!spilled && latest.size() >= in_memory_keys) spilled.emplace();
    if (spilled) {
      spilled->add(e);
    } else {
      apply(latest, nullptr, e);
    }
  };
  r.status = status_walk(db, [&](std::string_view k, std::string_view v, bool is_bucket) {
    ++r.revisions;
    if (is_bucket) throw corrupt("nested bucket inside the key bucket");
    main_revision(k);  // validates the key shape
    KvFields kv;
    if (!parse_kv_fields(v, &kv)) {
      throw corrupt("undecodable KeyValue at revision " + std::to_string(main_revision(k)));
    }
    if (kv.key.empty()) return;  // etcd's restore skips empty keys, such as a bump-revision marker
    LatestTable::Hashed h = latest.hash(kv.key);
    KeyRevision e{h.h1, h.h2, 0, 0, is_tombstone(k) ? 1u : 0u};
    // A KeyValue's key and value fit in one gRPC message (< 2 GiB), so in 32 bits.
    if (e.tombstone == 0) e.bytes = static_cast<uint32_t>(kv.key.size() + kv.value_size);
    std::string_view p = prefix_view(kv.key, prefix_depth);
    auto it = prefix_index.find(p);
    if (it == prefix_index.end()) {
      it = prefix_index.emplace(std::string(p), static_cast<uint32_t>(prefixes.size())).first;
      prefixes.push_back(PrefixStat{std::string(p), 0, 0});
    }
    e.prefix = it->second;
    if (pending) take(*pending);
    pending = e;
  });
  if (pending) take(*pending);
  if (spilled) {
    LatestTable partition;
    spilled->replay([&] { partition = LatestTable(); }, [&](const KeyRevision& e) { apply(partition, &latest, e); });
  }

  r.members = snapshot_members(db);
  if (db.has_bucket({"members_removed"})) {
    db.for_each({"members_removed"}, [&](std::string_view k, std::string_view, bool) {
      try {
        r.removed_member_ids.push_back(std::stoull(std::string(k), nullptr, 16));
      } catch (const std::exception&) {
        throw corrupt("removed member id '" + std::string(k) + "' is not hex");
      }
      return true;
    });
  }
  if (db.has_bucket({"cluster"})) {
    if (auto v = db.get({"cluster"}, "clusterVersion")) r.cluster_version = *v;
  }
  if (db.has_bucket({"meta"})) {
    r.consistent_index = snapshot_consistent_index(db);
    r.term = get_be64(db, "meta", "term").value_or(0);
    r.scheduled_compact_revision = get_revision(db, "scheduledCompactRev");
    r.finished_compact_revision = get_revision(db, "finishedCompactRev");
  }

  for (auto& stat : prefixes) {
    if (stat.keys == 0) continue;
    r.live_keys += stat.keys;
    r.prefixes.push_back(std::move(stat));
  }
  std::sort(r.prefixes.begin(), r.prefixes.end(),
            [](const PrefixStat& a, const PrefixStat& b) { return a.prefix < b.prefix; });

  if (db.has_bucket({"lease"})) {
    db.for_each({"lease"}, [&](std::string_view k, std::string_view v, bool is_bucket) {
      if (is_bucket) return true;
      auto f = decode_varint_fields(v, "lease " + hex_bytes(k));
      r.leases.push_back({f[0], f[1], f[2]});
      return true;
    });
  }
  if (db.has_bucket({"auth"})) {
    if (auto v = db.get({"auth"}, "authEnabled")) r.auth_enabled = !v->empty() && (*v)[0] == 1;
    r.auth_revision = get_be64(db, "auth", "authRevision").value_or(0);
  }
  auto count = [&](const std::string& bucket) {
    uint64_t n = 0;
    if (db.has_bucket({bucket})) {
      db.for_each({bucket}, [&](std::string_view, std::string_view, bool) {
        ++n;
        return true;
      });
    }
    return n;
  };
  r.users = count("authUsers");
  r.roles = count("authRoles");
  if (db.has_bucket({"alarm"})) {
    db.for_each({"alarm"}, [&](std::string_view k, std::string_view, bool) {
      etcdserverpb::AlarmMember a;
      if (!a.ParseFromArray(k.data(), static_cast<int>(k.size()))) throw corrupt("undecodable alarm " + hex_bytes(k));
      char id[17];
      std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(a.memberid()));
      r.alarms.push_back(etcdserverpb::AlarmMember::AlarmType_Name(a.alarm()) + " on member " + id);
      return true;
    });
  }
  return r;
}

void visit_latest(const BoltReader& db, const std::string& key, const std::string& range_end,
                  const std::function<void(const SnapshotKeyValue&)>& visit) {
  KeyRange range{key, range_end};
  std::map<std::string, SnapshotKeyValue> latest;
  scan_revisions(
      db, [&](const std::string& k) { return range.contains(k); },
      [&](const etcdserverpb::KeyValue& kv, bool tombstone) {
        if (tombstone) {
          latest.erase(kv.key());
          return;
        }
        auto& out = latest[kv.key()];
        out.key = kv.key();
        out.value = kv.value();
        out.create_revision = kv.create_revision();
        out.mod_revision = kv.mod_revision();
        out.version = kv.version();
        out.lease = kv.lease();
      });
  for (const auto& [k, kv] : latest) visit(kv);
}

bool holds_key_with_prefix(const BoltReader& db, std::string_view prefix) {
  if (!db.has_bucket({"key"})) return false;
  bool found = false;
  db.for_each({"key"}, [&](std::string_view k, std::string_view v, bool is_bucket) {
    if (is_bucket) throw corrupt("nested bucket inside the key bucket");
    KvFields kv;
    if (!parse_kv_fields(v, &kv)) throw corrupt("undecodable KeyValue at revision " + std::to_string(main_revision(k)));
    found = kv.key.substr(0, prefix.size()) == prefix && !kv.key.empty();
    return !found;
  });
  return found;
}

PrefixRange prefix_range(const std::string& prefix) {
  const std::string no_bound(1, '\0');
  if (prefix.empty()) return {no_bound, no_bound};
  std::string end = prefix;
  for (size_t i = end.size(); i-- > 0;) {
    if (static_cast<uint8_t>(end[i]) < 0xff) {
      end[i] = static_cast<char>(static_cast<uint8_t>(end[i]) + 1);
      end.resize(i + 1);
      return {prefix, end};
    }
  }
  return {prefix, no_bound};  // every byte is 0xff: no upper bound
}

}  // namespace etcdadm

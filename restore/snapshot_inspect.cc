#include "restore/snapshot_inspect.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "common/crc32c.h"
#include "common/error.h"
#include "etcdadm/proto/etcd.pb.h"

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

std::string prefix_of(const std::string& key, int depth) {
  size_t start = (!key.empty() && key[0] == '/') ? 1 : 0;
  size_t cut = start;
  size_t pos = start;
  for (int level = 0; level < depth; ++level) {
    size_t slash = key.find('/', pos);
    if (slash == std::string::npos) break;
    cut = slash;
    pos = slash + 1;
  }
  return key.substr(0, cut);
}

}  // namespace

SnapshotStatus snapshot_status(const BoltReader& db, StatusSemantics semantics) {
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
        s.revision = static_cast<int64_t>(be64(k));
      }
      ++s.total_key;
      return true;
    });
  }
  s.hash = h.value();
  if (auto v = db.has_bucket({"meta"}) ? db.get({"meta"}, "storageVersion") : std::nullopt) s.version = *v;
  if (semantics == StatusSemantics::kEtcd36) {
    int64_t live = 0;
    visit_latest(db, std::string(1, '\0'), std::string(1, '\0'), [&](const SnapshotKeyValue&) { ++live; });
    s.total_key = live;
  }
  return s;
}

SnapshotInspection inspect_snapshot(const BoltReader& db, int prefix_depth) {
  SnapshotInspection r;
  r.status = snapshot_status(db);

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
      r.members.push_back(std::move(m));
      return true;
    });
  }
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
    r.consistent_index = get_be64(db, "meta", "consistent_index").value_or(0);
    r.term = get_be64(db, "meta", "term").value_or(0);
    r.scheduled_compact_revision = get_revision(db, "scheduledCompactRev");
    r.finished_compact_revision = get_revision(db, "finishedCompactRev");
  }

  // Latest state of every key: live or not, and its size.
  struct State {
    bool live = false;
    uint64_t bytes = 0;
  };
  std::map<std::string, State> latest;
  if (db.has_bucket({"key"})) {
    db.for_each({"key"}, [&](std::string_view, std::string_view, bool) {
      ++r.revisions;
      return true;
    });
  }
  scan_revisions(
      db, [](const std::string&) { return true; },
      [&](const etcdserverpb::KeyValue& kv, bool tombstone) {
        auto& s = latest[kv.key()];
        s.live = !tombstone;
        s.bytes = tombstone ? 0 : kv.key().size() + kv.value().size();
      });
  std::map<std::string, PrefixStat> prefixes;
  for (const auto& [key, s] : latest) {
    if (!s.live) continue;
    ++r.live_keys;
    std::string p = prefix_of(key, prefix_depth);
    auto& stat = prefixes[p];
    stat.prefix = p;
    ++stat.keys;
    stat.bytes += s.bytes;
  }
  for (auto& [p, stat] : prefixes) r.prefixes.push_back(std::move(stat));

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

std::string prefix_range_end(const std::string& prefix) {
  std::string end = prefix;
  for (size_t i = end.size(); i-- > 0;) {
    if (static_cast<uint8_t>(end[i]) < 0xff) {
      end[i] = static_cast<char>(static_cast<uint8_t>(end[i]) + 1);
      end.resize(i + 1);
      return end;
    }
  }
  return std::string(1, '\0');  // every byte is 0xff (or no prefix): no upper bound
}

}  // namespace etcdadm

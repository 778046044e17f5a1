// Native restore: see native_restore.h. The byte layouts reproduce etcd's restore code
// (etcdutl/v3 snapshot/v3_snapshot.go saveDB/saveWALAndSnap/modifyLatestRevision/updateCIndex of
// 3.5.35, 3.6.16, 3.7.3; etcdctl 3.4.23 clientv3/snapshot/v3_snapshot.go), whose differences by
// version are three: 3.4's last WAL snapshot record has no ConfState; 3.6+ counts one failed v2
// store get ("getsFail":1); 3.7 (protobuf-go instead of gogo) leaves ConfChange.ID and
// ConfState.auto_leave unset instead of writing zeros.
#include "restore/native_restore.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "common/crc32c.h"
#include "common/error.h"
#include "common/failpoint.h"
#include "common/fs.h"
#include "etcd/datadir/bolt_reader.h"
#include "etcd/datadir/bolt_writer.h"
#include "etcd/datadir/mvcc.h"
#include "etcd/datadir/wal_writer.h"
#include "etcd/proto/datadir.pb.h"

namespace etcdadm {
namespace {

constexpr uint64_t kRaftTerm = 1;        // every entry a restore writes is of term 1
constexpr int32_t kEntryConfChange = 1;  // raftpb.EntryConfChange
constexpr int32_t kConfChangeAddNode = 0;
constexpr size_t kV2EventHistory = 1000;  // v2store's event queue capacity, serialized in full

bool is_34(const EtcdVersion& v) { return v.major == 3 && v.minor <= 4; }
bool uses_protobuf_go(const EtcdVersion& v) { return v.major > 3 || (v.major == 3 && v.minor >= 7); }
bool counts_failed_get(const EtcdVersion& v) { return v.major > 3 || (v.major == 3 && v.minor >= 6); }

// Go's encoding/json string encoding: ", \\ and control characters escaped (\\n, \\r, \\t by name,
// the rest as \\u00XX), <, > and & as \\u003c \\u003e \\u0026 (HTML-safe, Go's default), U+2028 and
// U+2029 escaped, other UTF-8 as is, and each invalid byte as \\ufffd.
std::string go_json_quote(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 0xf];
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length and the smallest code point it may encode.
    size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (c >= 0xf5) len = 0;
    uint32_t cp = len == 4 ? c & 0x07 : len == 3 ? c & 0x0f : c & 0x1f;
    bool ok = len != 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    ok = ok && !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10ffff)) &&
         !(cp >= 0xd800 && cp <= 0xdfff);
    if (!ok) {
      out += "\\ufffd";
      ++i;
    } else if (cp == 0x2028 || cp == 0x2029) {
      out += cp == 0x2028 ? "\\u2028" : "\\u2029";
      i += len;
    } else {
      out.append(s, i, len);
      i += len;
    }
  }
  return out + "\"";
}

std::string url_list_json(const std::vector<std::string>& urls) {
  std::string out = "[";
  for (size_t i = 0; i < urls.size(); ++i) out += (i ? "," : "") + go_json_quote(urls[i]);
  return out + "]";
}

// membership.RaftAttributes as JSON (isLearner omitted: a restore makes voters only).
std::string raft_attributes_json(const NewMember& m) { return "{\"peerURLs\":" + url_list_json(m.peer_urls) + "}"; }

}  // namespace

namespace {

void fill_voters(datadir::ConfState* cs, const NewCluster& cluster, const EtcdVersion& flavor) {
  for (const NewMember& m : cluster.members) cs->add_voters(m.id);
  if (!uses_protobuf_go(flavor)) cs->set_auto_leave(false);
}

std::string v2_node(const std::string& path, uint64_t index, const std::string& value_json,
                    const std::string& children) {
  return "{\"Path\":" + go_json_quote(path) + ",\"CreatedIndex\":" + std::to_string(index) +
         ",\"ModifiedIndex\":" + std::to_string(index) +
         ",\"ExpireTime\":\"0001-01-01T00:00:00Z\",\"Value\":" + value_json + ",\"Children\":" + children + "}";
}

void make_private_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0) throw_errno("cannot create", path, errno);
  if (::chmod(path.c_str(), 0700) != 0) throw_errno("cannot chmod", path, errno);  // whatever the umask
}

}  // namespace

bool native_restore_verified(const EtcdVersion& v) { return v.major == 3 && v.minor >= 4 && v.minor <= 7; }

std::string native_restore_verified_versions() { return "3.4, 3.5, 3.6 and 3.7"; }

void check_revision_bump(uint64_t bump_revision, bool mark_compacted) {
  if ((bump_revision == 0) != !mark_compacted) {
    throw Error(ErrorKind::kInvalidArgument,
                "--bump-revision and --mark-compacted go together (as in etcdutl snapshot restore)",
                "for Kubernetes: --bump-revision 1000000000 --mark-compacted (docs/operations.md)");
  }
  if (bump_revision > static_cast<uint64_t>(INT64_MAX / 2)) {
    throw Error(ErrorKind::kInvalidArgument, "--bump-revision " + std::to_string(bump_revision) + " is too large");
  }
}

std::string etcd_member_json(const NewMember& m) {
  std::string out = "{\"id\":" + std::to_string(m.id) + ",\"peerURLs\":" + url_list_json(m.peer_urls);
  if (!m.name.empty()) out += ",\"name\":" + go_json_quote(m.name);
  return out + "}";
}

std::string v2_store_json(const NewCluster& cluster, const EtcdVersion& flavor) {
  // Members are created in ascending ID order (3.4/3.5; 3.6+ use Go's random map order, of which
  // this is one), so member k (1-based) has index k; `Children` maps serialize sorted by key.
  const size_t n = cluster.members.size();
  std::vector<std::pair<std::string, std::string>> children;  // id hex -> member dir node
  std::string events;
  for (size_t k = 0; k < n; ++k) {
    const NewMember& m = cluster.members[k];
    std::string dir = "/0/members/" + id_hex(m.id);
    std::string attrs = go_json_quote(raft_attributes_json(m));
    std::string leaf = v2_node(dir + "/raftAttributes", k + 1, attrs, "null");
    children.emplace_back(id_hex(m.id), v2_node(dir, k + 1, "\"\"", "{\"raftAttributes\":" + leaf + "}"));
    events += "{\"action\":\"create\",\"node\":{\"key\":" + go_json_quote(dir + "/raftAttributes") +
              ",\"value\":" + attrs + ",\"modifiedIndex\":" + std::to_string(k + 1) +
              ",\"createdIndex\":" + std::to_string(k + 1) + "}},";
  }
  std::sort(children.begin(), children.end());
  std::string members_children = "{";
  for (size_t i = 0; i < children.size(); ++i) {
    members_children += (i ? "," : "") + go_json_quote(children[i].first) + ":" + children[i].second;
  }
  members_children += "}";
  std::string members = v2_node("/0/members", 1, "\"\"", members_children);
  std::string root = v2_node("/", 0, "\"\"",
                             "{\"0\":" + v2_node("/0", 0, "\"\"", "{\"members\":" + members + "}") +
                                 ",\"1\":" + v2_node("/1", 0, "\"\"", "{}") + "}");
  for (size_t k = n; k < kV2EventHistory; ++k) events += "null,";
  events.pop_back();
  std::string ns = std::to_string(n);
  return "{\"Root\":" + root + ",\"WatcherHub\":{\"EventHistory\":{\"Queue\":{\"Events\":[" + events +
         "],\"Size\":" + ns + ",\"Front\":0,\"Back\":" + ns + ",\"Capacity\":" + std::to_string(kV2EventHistory) +
         "},\"StartIndex\":1,\"LastIndex\":" + ns + "}},\"CurrentIndex\":" + ns +
         ",\"Stats\":{\"getsSuccess\":0,\"getsFail\":" + (counts_failed_get(flavor) ? "1" : "0") +
         ",\"setsSuccess\":0,\"setsFail\":0,\"deleteSuccess\":0,\"deleteFail\":0,\"updateSuccess\":0,"
         "\"updateFail\":0,\"createSuccess\":" +
         ns +
         ",\"createFail\":0,\"compareAndSwapSuccess\":0,\"compareAndSwapFail\":0,\"compareAndDeleteSuccess\":0,"
         "\"compareAndDeleteFail\":0,\"expireCount\":0,\"watchers\":0},\"CurrentVersion\":2}";
}

std::string wal_records_for_restore(const NewCluster& cluster, const std::string& member_name,
                                    const EtcdVersion& flavor) {
  const uint64_t n = cluster.members.size();
  uint32_t crc = 0;
  std::string frames = wal_frame(WalRecordType::kCrc, "", /*has_data=*/false, crc);

  datadir::WalMetadata meta;
  meta.set_node_id(cluster.member(member_name).id);
  meta.set_cluster_id(cluster.cluster_id);
  frames += wal_frame(WalRecordType::kMetadata, meta.SerializeAsString(), true, crc);

  datadir::WalSnapshot empty;
  empty.set_index(0);
  empty.set_term(0);
  frames += wal_frame(WalRecordType::kSnapshot, empty.SerializeAsString(), true, crc);

  for (uint64_t i = 0; i < n; ++i) {
    const NewMember& m = cluster.members[i];
    datadir::ConfChange cc;
    if (!uses_protobuf_go(flavor)) cc.set_id(0);
    cc.set_type(kConfChangeAddNode);
    cc.set_node_id(m.id);
    cc.set_context(etcd_member_json(m));
    datadir::RaftEntry e;
    e.set_type(kEntryConfChange);
    e.set_term(kRaftTerm);
    e.set_index(i + 1);
    e.set_data(cc.SerializeAsString());
    frames += wal_frame(WalRecordType::kEntry, e.SerializeAsString(), true, crc);
  }

  datadir::HardState hs;
  hs.set_term(kRaftTerm);
  hs.set_vote(cluster.members.front().id);  // etcd's restore votes for the lowest ID
  hs.set_commit(n);
  frames += wal_frame(WalRecordType::kState, hs.SerializeAsString(), true, crc);

  datadir::WalSnapshot snap;
  snap.set_index(n);
  snap.set_term(kRaftTerm);
  if (!is_34(flavor)) fill_voters(snap.mutable_conf_state(), cluster, flavor);
  frames += wal_frame(WalRecordType::kSnapshot, snap.SerializeAsString(), true, crc);
  return frames;
}

std::string snap_file_for_restore(const NewCluster& cluster, const EtcdVersion& flavor) {
  datadir::RaftSnapshot s;
  s.set_data(v2_store_json(cluster, flavor));
  datadir::SnapshotMetadata* md = s.mutable_metadata();
  fill_voters(md->mutable_conf_state(), cluster, flavor);
  md->set_index(cluster.members.size());
  md->set_term(kRaftTerm);
  std::string raw = s.SerializeAsString();
  datadir::SnapFile f;
  f.set_crc(crc32c(raw));
  f.set_data(raw);
  return f.SerializeAsString();
}

NativeDataDirWriter::NativeDataDirWriter(std::string data_dir, NativeRestorePlan plan)
    : data_dir_(std::move(data_dir)), plan_(std::move(plan)) {
  if (plan_.cluster.members.empty()) throw Error(ErrorKind::kInvalidArgument, "a restore needs at least one member");
  plan_.cluster.member(plan_.member_name);  // throws when absent
  check_revision_bump(plan_.bump_revision, plan_.mark_compacted);
  make_private_dir(data_dir_);
  make_private_dir(data_dir_ + "/member");
  make_private_dir(data_dir_ + "/member/snap");
  db_path_ = data_dir_ + "/member/snap/db";
}

void NativeDataDirWriter::set_revision_bump(uint64_t bump_revision, bool mark_compacted) {
  check_revision_bump(bump_revision, mark_compacted);
  plan_.bump_revision = bump_revision;
  plan_.mark_compacted = mark_compacted;
}

NativeRestoreResult NativeDataDirWriter::finish(uint64_t db_bytes, const EtcdVersion& flavor) {
  const NewCluster& cluster = plan_.cluster;
  NativeRestoreResult result;
  result.member_id = cluster.member(plan_.member_name).id;
  result.cluster_id = cluster.cluster_id;

  // What must be true of an etcd backend before it is changed.
  {
    auto db = BoltReader::open(db_path_, db_bytes);
    for (const char* bucket : {"meta", "key"}) {
      if (!db->has_bucket({bucket})) {
        throw Error(ErrorKind::kCorrupt,
                    "the snapshot has no '" + std::string(bucket) + "' bucket: not an etcd v3 backend");
      }
    }
    result.snapshot_revision = newest_revision(*db);
  }
  result.revision = result.snapshot_revision;

  BoltUpdate db(db_path_, db_bytes);
  std::map<std::string, std::string> members;
  for (const NewMember& m : cluster.members) members[id_hex(m.id)] = etcd_member_json(m);
  db.replace_bucket("members", std::move(members));
  db.replace_bucket("members_removed", {});
  db.ensure_bucket("cluster");
  db.put("meta", "consistent_index", big_endian_u64(cluster.members.size()));
  if (!is_34(flavor)) db.put("meta", "term", big_endian_u64(kRaftTerm));
  if (plan_.bump_revision > 0) {
    // etcdutl's modifyLatestRevision: an empty value at (latest main + N, 0), and the scheduled
    // compaction that etcd finishes on start, so that every older revision reads as compacted.
    result.revision = result.snapshot_revision + static_cast<int64_t>(plan_.bump_revision);
    std::string rev = revision_key(result.revision, 0);
    db.put("key", rev, "");
    if (plan_.mark_compacted) db.put("meta", "scheduledCompactRev", rev);
  }
  db.commit();
  failpoint("restore/native/db-committed");

  make_private_dir(data_dir_ + "/member/wal");
  write_new_synced_file(data_dir_ + "/member/wal/" + wal_file_name(0, 0),
                        wal_records_for_restore(cluster, plan_.member_name, flavor), kWalSegmentBytes);
  failpoint("restore/native/wal-written");
  char snap_name[64];
  std::snprintf(snap_name, sizeof snap_name, "%016llx-%016llx.snap", static_cast<unsigned long long>(kRaftTerm),
                static_cast<unsigned long long>(cluster.members.size()));
  write_new_synced_file(data_dir_ + "/member/snap/" + snap_name, snap_file_for_restore(cluster, flavor));
  for (const char* dir : {"/member/wal", "/member/snap", "/member", ""}) fsync_dir(data_dir_ + dir);
  return result;
}

}  // namespace etcdadm

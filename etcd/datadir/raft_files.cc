#include "etcd/datadir/raft_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/crc32c.h"
#include "common/error.h"
#include "etcd/datadir/wal_writer.h"
#include "etcd/proto/datadir.pb.h"

namespace etcdadm {

namespace {

constexpr uintmax_t kMaxSnapFileBytes = uintmax_t{1} << 30;  // a v2 store far beyond any real one is not read

// The names in `dir` of the form <16 hex>-<16 hex><suffix>, newest (highest) first: fixed-width
// hex sorts as the numbers do, which is how etcd orders its snapshots and segments.
std::vector<std::string> raft_file_names(const std::string& dir, const std::string& suffix) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() == 33 + suffix.size() && name.ends_with(suffix) && name[16] == '-') names.push_back(name);
  }
  std::sort(names.rbegin(), names.rend());
  return names;
}

std::string read_head(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(max_bytes, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(max_bytes));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

}  // namespace

uint64_t newest_raft_snapshot_index(const std::string& snap_dir) {
  for (const std::string& name : raft_file_names(snap_dir, ".snap")) {
    const std::string path = snap_dir + "/" + name;
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec || size > kMaxSnapFileBytes) continue;
    datadir::SnapFile file;
    datadir::RaftSnapshot snap;
    const std::string bytes = read_head(path, size);
    if (bytes.size() != size || !file.ParseFromString(bytes) || file.data().empty() ||
        crc32c(file.data()) != file.crc() || !snap.ParseFromString(file.data())) {
      continue;
    }
    return snap.metadata().index();
  }
  return 0;
}

WalIdentity wal_identity(const std::string& wal_dir) {
  const auto names = raft_file_names(wal_dir, ".wal");
  if (names.empty()) throw Error(ErrorKind::kNotFound, "no WAL segment in " + wal_dir);
  const std::string path = wal_dir + "/" + names.front();
  const std::string head = read_head(path, 64 * 1024);
  // The first records: crc (the previous segment's CRC), then metadata, whose CRC continues it.
  size_t at = 0;
  uint32_t crc = 0;
  for (int n = 0; n < 2; ++n) {
    if (head.size() - at < 8) break;
    uint64_t field = 0;
    for (int i = 0; i < 8; ++i) field |= uint64_t{static_cast<unsigned char>(head[at + i])} << (8 * i);
    const uint64_t len = field & ((uint64_t{1} << 56) - 1);
    const uint64_t pad = (field >> 63) ? (field >> 56) & 0x7 : 0;
    if (len == 0 || len > head.size() - at - 8) break;
    datadir::WalRecord rec;
    if (!rec.ParseFromArray(head.data() + at + 8, static_cast<int>(len))) break;
    at += 8 + len + pad;
    if (n == 0 && rec.type() == static_cast<int64_t>(WalRecordType::kCrc)) {
      crc = rec.crc();
      continue;
    }
    datadir::WalMetadata meta;
    if (n == 1 && rec.type() == static_cast<int64_t>(WalRecordType::kMetadata) &&
        crc32c_update(crc, rec.data()) == rec.crc() && meta.ParseFromString(rec.data()) && meta.node_id() != 0) {
      return {meta.node_id(), meta.cluster_id()};
    }
    break;
  }
  throw Error(ErrorKind::kCorrupt, path + " does not open with a crc record and the member's metadata",
              "read the member's log; recover on another survivor, or from a backup");
}

}  // namespace etcdadm

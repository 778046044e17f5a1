#include "etcd/datadir/wal_writer.h"

#include <cstdio>

#include "common/crc32c.h"
#include "etcd/proto/datadir.pb.h"

namespace etcdadm {

std::string wal_file_name(uint64_t seq, uint64_t index) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%016llx-%016llx.wal", static_cast<unsigned long long>(seq),
                static_cast<unsigned long long>(index));
  return buf;
}

std::string wal_frame(WalRecordType type, const std::string& data, bool has_data, uint32_t& crc) {
  crc = crc32c_update(crc, data);
  datadir::WalRecord rec;
  rec.set_type(static_cast<int64_t>(type));
  rec.set_crc(crc);
  if (has_data) rec.set_data(data);
  std::string body = rec.SerializeAsString();
  uint64_t len = body.size();
  uint64_t pad = (8 - len % 8) % 8;
  uint64_t field = len | (pad ? (0x80 | pad) << 56 : 0);
  std::string frame(8, '\0');
  for (int i = 0; i < 8; ++i) frame[i] = static_cast<char>((field >> (8 * i)) & 0xff);
  frame += body;
  frame.append(pad, '\0');
  return frame;
}

}  // namespace etcdadm

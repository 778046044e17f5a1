#include "restore/wal_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/crc32c.h"
#include "common/error.h"
#include "common/fs.h"
#include "etcdadm/proto/datadir.pb.h"

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

WalFileWriter::WalFileWriter(std::string path, uint64_t preallocate) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ < 0) throw_errno("cannot create", path_, errno);
  if (preallocate > 0) {
    int err = ::posix_fallocate(fd_, 0, static_cast<off_t>(preallocate));
    if (err != 0) throw_errno("cannot preallocate " + std::to_string(preallocate) + " bytes for", path_, err);
  }
  pending_ = wal_frame(WalRecordType::kCrc, "", /*has_data=*/false, crc_);
}

WalFileWriter::~WalFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void WalFileWriter::append(WalRecordType type, const std::string& data) {
  pending_ += wal_frame(type, data, /*has_data=*/true, crc_);
}

void WalFileWriter::sync() {
  size_t done = 0;
  while (done < pending_.size()) {
    ssize_t r = ::pwrite(fd_, pending_.data() + done, pending_.size() - done, static_cast<off_t>(offset_ + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw_errno("cannot write", path_, errno);
    done += static_cast<size_t>(r);
  }
  offset_ += pending_.size();
  pending_.clear();
  if (::fdatasync(fd_) != 0) throw_errno("cannot sync", path_, errno);
}

}  // namespace etcdadm

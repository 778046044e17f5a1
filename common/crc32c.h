// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as etcd uses for `snapshot status`
// hashes and WAL/snap records; ISA-L computes it. crc32c("123456789") == 0xE3069283.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace etcdadm {

// Continues a running CRC: start with crc = 0 and feed the returned value back (Go's
// crc32.Update(crc, castagnoliTable, data) semantics).
uint32_t crc32c_update(uint32_t crc, const void* data, size_t size);
inline uint32_t crc32c_update(uint32_t crc, std::string_view s) { return crc32c_update(crc, s.data(), s.size()); }
inline uint32_t crc32c(std::string_view s) { return crc32c_update(0, s); }

// Streaming form.
class Crc32c {
 public:
  void update(const void* data, size_t size) { crc_ = crc32c_update(crc_, data, size); }
  void update(std::string_view s) { crc_ = crc32c_update(crc_, s); }
  uint32_t value() const { return crc_; }

 private:
  uint32_t crc_ = 0;
};

}  // namespace etcdadm

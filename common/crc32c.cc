#include "common/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace etcdadm {

// ISA-L's crc32_iscsi is CRC-32C without the customary pre- and post-inversion, over int lengths.
// Measured against the SSE4.2 three-stream code it replaced (bench/crc32c_compare.sh): 2.3x as
// fast on 64 MiB buffers, equal within the run-to-run spread on 4 KiB pages.
uint32_t crc32c_update(uint32_t crc, const void* data, size_t size) {
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));  // ISA-L's signature lacks const; it only reads
  crc = ~crc;
  while (size > 0) {
    const size_t n = size > static_cast<size_t>(INT_MAX) ? static_cast<size_t>(INT_MAX) & ~size_t{63} : size;
    crc = crc32_iscsi(p, static_cast<int>(n), crc);
    p += n;
    size -= n;
  }
  return ~crc;
}

}  // namespace etcdadm

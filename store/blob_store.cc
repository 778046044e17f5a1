#include "store/blob_store.h"

#include "common/error.h"

namespace etcdadm {

std::string BlobStore::read_small(const std::string& key, size_t limit) {
  auto r = open(key);
  std::string out;
  uint8_t buf[65536];
  for (;;) {
    size_t n = r->read(buf, sizeof buf);
    if (n == 0) break;
    out.append(reinterpret_cast<const char*>(buf), n);
    if (out.size() > limit) throw Error(ErrorKind::kCorrupt, key + " in " + url() + " is larger than expected");
  }
  return out;
}

void BlobStore::write_small(const std::string& key, const std::string& contents, bool overwrite) {
  auto w = create(key, overwrite);
  w->write(reinterpret_cast<const uint8_t*>(contents.data()), contents.size());
  w->commit();
}

}  // namespace etcdadm

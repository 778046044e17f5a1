#include "store/blob_store.h"

#include <algorithm>

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

std::vector<BlobInfo> ObjectKeys::list(const std::string& prefix, const PageFn& page) const {
  size_t strip = root.empty() ? 0 : root.size() + 1;
  std::vector<BlobInfo> objects, out;
  std::string token;
  do {
    objects.clear();
    token = page(object(prefix), token, objects);
    for (auto& o : objects) {
      if (o.key.size() > strip) out.push_back(BlobInfo{o.key.substr(strip), o.size, o.modified_unix_micros});
    }
  } while (!token.empty());
  std::sort(out.begin(), out.end(), [](const BlobInfo& a, const BlobInfo& b) { return a.key < b.key; });
  return out;
}

}  // namespace etcdadm

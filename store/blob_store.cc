#include "store/blob_store.h"

#include <algorithm>
#include <set>

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
  const std::string wanted = object(prefix);
  std::vector<BlobInfo> objects, out;
  std::set<std::string> tokens_seen;
  std::string token;
  do {
    objects.clear();
    token = page(wanted, token, objects);
    for (auto& o : objects) {
      // A server answers with what was asked for; anything else (a broken or hostile endpoint) is
      // not part of this store and must not be mapped to a key of it.
      if (o.key.size() <= strip || o.key.compare(0, wanted.size(), wanted) != 0) continue;
      out.push_back(BlobInfo{o.key.substr(strip), o.size, o.modified_unix_micros});
    }
    // A token handed out twice would page forever (and grow `out` without end).
    if (!token.empty() && !tokens_seen.insert(token).second) {
      throw Error(ErrorKind::kCorrupt, "the listing of " + (wanted.empty() ? std::string("the bucket") : wanted) +
                                           " returned the same page token twice (" + token.substr(0, 64) + ")",
                  "the endpoint does not behave like S3/GCS; check --s3-endpoint / --gcs-endpoint");
    }
  } while (!token.empty());
  std::sort(out.begin(), out.end(), [](const BlobInfo& a, const BlobInfo& b) { return a.key < b.key; });
  return out;
}

}  // namespace etcdadm

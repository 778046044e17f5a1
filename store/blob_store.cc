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

std::vector<BlobInfo> BlobStore::list_range(const std::string& start_after, const std::string& end_before) {
  std::vector<BlobInfo> out;
  for (auto& b : list("")) {
    if (b.key > start_after && b.key < end_before) out.push_back(std::move(b));
  }
  return out;
}

namespace {

// Pages through a listing of objects under `wanted` (full object names), keeping those with
// `keep(store key)`, until `page` hands out no token or `done(full name)` says to stop.
std::vector<BlobInfo> page_through(const std::string& root, const std::string& wanted,
                                   const std::function<std::string(const std::string&, std::vector<BlobInfo>&)>& page,
                                   const std::function<bool(const std::string&)>& keep,
                                   const std::function<bool(const std::string&)>& past_end) {
  const size_t strip = root.empty() ? 0 : root.size() + 1;
  std::vector<BlobInfo> objects, out;
  std::set<std::string> tokens_seen;
  std::string token;
  bool ended = false;
  do {
    objects.clear();
    token = page(token, objects);
    for (auto& o : objects) {
      // A server answers with what was asked for; anything else (a broken or hostile endpoint) is
      // not part of this store and must not be mapped to a key of it.
      if (o.key.size() <= strip || o.key.compare(0, wanted.size(), wanted) != 0) continue;
      if (past_end(o.key)) {
        ended = true;
        continue;
      }
      std::string key = o.key.substr(strip);
      if (keep(key)) out.push_back(BlobInfo{std::move(key), o.size, o.modified_unix_micros});
    }
    // A token handed out twice would page forever (and grow `out` without end).
    if (!token.empty() && !tokens_seen.insert(token).second) {
      throw Error(ErrorKind::kCorrupt,
                  "the listing of " + (wanted.empty() ? std::string("the bucket") : wanted) +
                      " returned the same page token twice (" + token.substr(0, 64) + ")",
                  "the endpoint does not behave like S3/GCS; check --s3-endpoint / --gcs-endpoint");
    }
  } while (!token.empty() && !ended);
  std::sort(out.begin(), out.end(), [](const BlobInfo& a, const BlobInfo& b) { return a.key < b.key; });
  return out;
}

}  // namespace

void check_store_key(const std::string& key) {
  auto refuse = [&](const std::string& why) {
    std::string shown;
    for (unsigned char c : key.substr(0, 200)) shown += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
    throw Error(ErrorKind::kCorrupt, "refusing the store key '" + shown + "': " + why,
                "a name in the store's listing or metadata is not one etcdadm writes; the store may have been "
                "tampered with");
  };
  for (unsigned char c : key) {
    if (c < 0x20 || c == 0x7f) refuse("it holds a control character");
  }
  size_t start = 0;
  for (;;) {
    size_t slash = key.find('/', start);
    std::string segment = key.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    bool last = slash == std::string::npos;
    if (segment == "." || segment == "..") refuse("a '" + segment + "' segment would resolve outside the store");
    if (segment.empty() && !key.empty() && !(last && start > 0)) refuse("it has an empty segment");
    if (last) break;
    start = slash + 1;
  }
}

std::vector<BlobInfo> ObjectKeys::list(const std::string& prefix, const PageFn& page) const {
  const std::string wanted = object(prefix);
  return page_through(
      root, wanted, [&](const std::string& token, std::vector<BlobInfo>& out) { return page(wanted, token, out); },
      [](const std::string&) { return true; }, [](const std::string&) { return false; });
}

std::vector<BlobInfo> ObjectKeys::list_range(const std::string& start_after, const std::string& end_before,
                                             const RangePageFn& page) const {
  const std::string wanted = object("");
  const std::string first = object(start_after), last = object(end_before);
  return page_through(
      root, wanted,
      [&](const std::string& token, std::vector<BlobInfo>& out) { return page(wanted, first, last, token, out); },
      [&](const std::string& key) { return key > start_after; },  // also when the API's bound is inclusive (GCS)
      [&](const std::string& full) { return full >= last; });
}

}  // namespace etcdadm

// libFuzzer target for the bbolt reader (not built by default; see bench/docs/fuzz.md,
// "bolt_reader"). Opens the input as a bbolt file held in memory and walks every bucket recursively,
// with get() on some keys. Only etcdadm::Error may come out; anything else (a crash, a sanitizer
// report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "etcd/datadir/bolt_reader.h"

namespace {

// Nested buckets may point back at their ancestors: limit the nesting and the buckets walked.
constexpr size_t kMaxNesting = 8;
constexpr int kMaxBuckets = 256;

void walk(const etcdadm::BoltReader& r, std::vector<std::string>& path, int& buckets) {
  std::vector<std::string> nested, keys;
  r.for_each(path, [&](std::string_view k, std::string_view v, bool is_bucket) {
    (is_bucket ? nested : keys).emplace_back(k);
    (void)v.size();
    return true;
  });
  for (size_t i = 0; i < keys.size() && i < 4; ++i) r.get(path, keys[i]);
  r.has_bucket(path);
  if (path.size() >= kMaxNesting) return;
  for (const std::string& b : nested) {
    if (++buckets > kMaxBuckets) return;
    path.push_back(b);
    walk(r, path, buckets);
    path.pop_back();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto r = etcdadm::BoltReader::open_memory(std::string_view(reinterpret_cast<const char*>(data), size));
    std::vector<std::string> path;
    int buckets = 0;
    walk(*r, path, buckets);
  } catch (const etcdadm::Error&) {
  }
  return 0;
}

// A read-only reader of bbolt database files (etcd's backend, and so every etcd snapshot), written
// from bbolt's on-disk format. It reads pages with
// pread into a small cache instead of mapping the file, so memory stays bounded by the tree depth
// however large the file is, and it checks every offset before using it: a corrupt or hostile file
// gives an Error(kCorrupt) naming the page, never a crash or an out-of-bounds read.
//
// Layout reminders (little endian): page header {id u64, flags u16, count u16, overflow u32};
// metas on pages 0 and 1 (the valid one with the higher txid wins); branch elements {pos u32,
// ksize u32, pgid u64}; leaf elements {flags u32, pos u32, ksize u32, vsize u32}; a bucket value is
// {root pgid u64, sequence u64}, root 0 = inline bucket whose leaf page image follows.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace etcdadm {

struct BoltMeta {
  uint32_t page_size = 0;
  uint32_t version = 0;
  uint32_t flags = 0;            // meta flags (unused by bbolt today; kept as found)
  uint64_t root_pgid = 0;        // root bucket's root page
  uint64_t root_sequence = 0;    // root bucket's sequence
  uint64_t freelist_pgid = 0;    // 0xFFFFFFFFFFFFFFFF with etcd's NoFreelistSync
  uint64_t high_water_pgid = 0;  // meta.pgid: pages in use
  uint64_t txid = 0;
  int meta_page = 0;  // 0 or 1: the one used
};

// Receives one entry of a bucket, in key order. `is_bucket`: the value is a nested bucket (its raw
// bucket header). Return false to stop the walk.
using BoltVisitor = std::function<bool(std::string_view key, std::string_view value, bool is_bucket)>;

class BoltReader {
 public:
  // Opens and validates the meta pages. `file_size_limit`: bytes of the file that belong to the
  // database (a snapshot's 32-byte SHA-256 trailer excluded); 0 = the whole file.
  static std::unique_ptr<BoltReader> open(const std::string& path, uint64_t file_size_limit = 0);
  // The same over a database held in memory (the bytes are copied): for tests and fuzzing. Errors
  // name the file "<memory>".
  static std::unique_ptr<BoltReader> open_memory(std::string_view bytes, uint64_t file_size_limit = 0);
  ~BoltReader();

  const BoltMeta& meta() const { return meta_; }
  // meta.pgid * pageSize: what `etcdctl snapshot status` reports as totalSize.
  uint64_t total_size() const { return meta_.high_water_pgid * meta_.page_size; }

  // Walks the entries of the bucket at `path` ({} = the root bucket, whose entries are the
  // top-level buckets) in key order. Throws kNotFound when a bucket on the path does not exist.
  void for_each(const std::vector<std::string>& path, const BoltVisitor& visit) const;
  bool has_bucket(const std::vector<std::string>& path) const;
  // The entry with the greatest key of the bucket at `path` (nullopt when it is empty), found by
  // descending the rightmost edge of its tree: cheap however large the bucket.
  std::optional<std::pair<std::string, std::string>> last(const std::vector<std::string>& path) const;
  // One value by key (nullopt when absent; nested buckets are not values).
  std::optional<std::string> get(const std::vector<std::string>& path, std::string_view key) const;

 private:
  BoltReader() = default;
  struct Impl;
  static std::unique_ptr<BoltReader> make(std::unique_ptr<Impl> impl, uint64_t file_size_limit);
  std::unique_ptr<Impl> impl_;
  BoltMeta meta_;
};

}  // namespace etcdadm

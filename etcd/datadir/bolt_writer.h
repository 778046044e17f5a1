// A copy-on-write update of an existing bbolt file (etcd's backend), committed the way bbolt
// commits a write transaction: every node on the path to a change is written to a new page after
// the pages in use, never over a page the current tree uses; then the file is synced; then the next
// meta page (txid T + 1, on page (T + 1) % 2, as bbolt places it) is written and synced. A crash before the meta write
// leaves the old tree valid; after it, the new one. The free list is not written (meta.freelist = "none", as etcd's
// NoFreelistSync does): bbolt rebuilds it on open from the pages the tree does not reach, which is how the pages this
// update leaves behind become free.
//
// What the native restore needs and nothing more: top-level buckets (no nested ones are created),
// puts, and replacing a bucket's whole contents. A bucket that ends small enough is stored inline,
// as bbolt does (a leaf with no nested buckets of at most pageSize/4 bytes); nodes larger than a page
// are split into pages of at most one page (a single larger element gets overflow pages). The large
// `key` bucket is touched only along the path to the one leaf a bump writes to.
//
// The new pages are written in runs of 4 MiB while the tree is rewritten, so a larger commit that
// fails part-way (a damaged page found late, a full disk) may leave pages past the high-water mark
// and a snapshot's trailer cut; the tree the metas name is untouched. Every caller updates a
// staging copy that a failure discards.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "etcd/datadir/bolt_reader.h"

namespace etcdadm {

// kEachCommit: a commit syncs the new pages, then its meta (a crash leaves the old tree or the new
// one). kDeferred: no sync at all, for a run of commits into a staging copy that is synced once
// after the last (a crash in between leaves a file that must be discarded).
enum class BoltSync { kEachCommit, kDeferred };

class BoltUpdate {
 public:
  // `db_bytes`: how many bytes of the file belong to the database (a snapshot's 32-byte SHA-256
  // trailer excluded; 0 = the whole file). The commit cuts the file there before appending.
  // Throws kCorrupt when the metas are unusable.
  explicit BoltUpdate(std::string path, uint64_t db_bytes = 0, BoltSync sync = BoltSync::kEachCommit);

  // key = value in the top-level bucket `bucket`, which is created when absent.
  void put(const std::string& bucket, const std::string& key, const std::string& value);
  // The same for keys that come in strictly increasing order (a change log's revisions), kept as
  // given, without a sorted map's cost; the bucket takes no put() in the same update. kInternal
  // for a key not after the one before, or a bucket given both.
  void append(const std::string& bucket, std::string key, std::string value);
  // The top-level bucket `bucket` holds exactly `entries` afterwards (created when absent; earlier
  // puts to it in this update are dropped). Its sequence number is kept.
  void replace_bucket(const std::string& bucket, std::map<std::string, std::string> entries);

  // The top-level bucket `bucket` exists afterwards (an empty one is created when absent).
  void ensure_bucket(const std::string& bucket);

  // Writes and syncs the new pages, then the new meta page. Nothing changes on disk before this.
  void commit();

  const BoltMeta& meta_before() const { return meta_; }

 private:
  struct Change {
    bool replace = false;
    std::map<std::string, std::string> entries;                 // puts, or the whole contents when `replace`
    std::vector<std::pair<std::string, std::string>> appended;  // append(): in key order
  };
  std::string path_;
  uint64_t db_bytes_ = 0;
  BoltSync sync_;
  BoltMeta meta_;
  std::map<std::string, Change> changes_;
};

}  // namespace etcdadm

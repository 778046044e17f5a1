// Copy-on-write bbolt update: see bolt_writer.h. The node layout written here is bbolt's
// node.write: a page header, then `count` elements, then every element's key (and value) packed
// after the last element, each element's `pos` counting from the element's own address.
#include "etcd/datadir/bolt_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <set>
#include <utility>

#include "common/error.h"
#include "common/fs.h"
#include "etcd/datadir/bolt_format.h"

namespace etcdadm {
namespace {

using namespace bolt;

// One element of a node: a leaf's key/value (flags: kBucketLeafFlag for a nested bucket) or a
// branch's key/child page.
struct Element {
  uint32_t flags = 0;
  std::string key;
  std::string value;
  uint64_t child = 0;
};

struct Node {
  bool leaf = true;
  std::vector<Element> elements;
};

size_t element_bytes(const Element& e, bool leaf) { return kElementSize + e.key.size() + (leaf ? e.value.size() : 0); }

// bbolt's bucket.inlineable: a leaf without nested buckets of at most pageSize / 4 bytes.
bool inlineable(const std::vector<Element>& leaf, uint32_t page_size) {
  size_t size = kPageHeaderSize;
  for (const Element& e : leaf) {
    if (e.flags & kBucketLeafFlag) return false;
    size += element_bytes(e, true);
    if (size > page_size / 4) return false;
  }
  return true;
}

// Lays elements [first, last) out as a node image at `p`, which holds `bytes` zero bytes, with page
// id `pgid` (0 for an inline bucket) and `overflow` extra pages.
void write_node_image(char* p, const std::vector<Element>& elements, size_t first, size_t last, bool leaf,
                      uint64_t pgid, uint32_t overflow) {
  const size_t count = last - first;
  store<uint64_t>(p, pgid);
  store<uint16_t>(p + 8, leaf ? kLeafFlag : kBranchFlag);
  store<uint16_t>(p + 10, static_cast<uint16_t>(count));
  store<uint32_t>(p + 12, overflow);
  size_t data = kPageHeaderSize + count * kElementSize;
  for (size_t i = 0; i < count; ++i) {
    const Element& e = elements[first + i];
    char* el = p + kPageHeaderSize + i * kElementSize;
    uint32_t pos = static_cast<uint32_t>(data - (kPageHeaderSize + i * kElementSize));
    if (leaf) {
      store<uint32_t>(el, e.flags);
      store<uint32_t>(el + 4, pos);
      store<uint32_t>(el + 8, static_cast<uint32_t>(e.key.size()));
      store<uint32_t>(el + 12, static_cast<uint32_t>(e.value.size()));
    } else {
      store<uint32_t>(el, pos);
      store<uint32_t>(el + 4, static_cast<uint32_t>(e.key.size()));
      store<uint64_t>(el + 8, e.child);
    }
    std::memcpy(p + data, e.key.data(), e.key.size());
    data += e.key.size();
    if (leaf) {
      std::memcpy(p + data, e.value.data(), e.value.size());
      data += e.value.size();
    }
  }
}

// An inline bucket's leaf image (page id 0, no overflow).
std::string inline_leaf_image(const std::vector<Element>& elements, size_t bytes) {
  std::string img(bytes, '\0');
  write_node_image(img.data(), elements, 0, elements.size(), /*leaf=*/true, 0, 0);
  return img;
}

// Parses a node image (a page with its overflow, or an inline bucket's leaf) after checking every
// offset against `len`. `what` names it in errors.
Node parse_node(const char* p, size_t len, const std::string& what) {
  auto corrupt = [&](const std::string& why) { throw Error(ErrorKind::kCorrupt, what + ": " + why); };
  if (len < kPageHeaderSize) corrupt("shorter than a page header");
  uint16_t flags = load<uint16_t>(p + 8);
  uint16_t count = load<uint16_t>(p + 10);
  if (flags != kLeafFlag && flags != kBranchFlag) corrupt("neither a leaf nor a branch page");
  Node n;
  n.leaf = flags == kLeafFlag;
  if (kPageHeaderSize + size_t{count} * kElementSize > len) corrupt("elements overrun the page");
  n.elements.resize(count);
  // bbolt packs each element's key (and value) after the previous one's: data that overlaps or
  // goes backwards is damage, and would let a page of a few MiB make us copy terabytes.
  uint64_t data_end = kPageHeaderSize + size_t{count} * kElementSize;
  for (size_t i = 0; i < count; ++i) {
    size_t off = kPageHeaderSize + i * kElementSize;
    const char* el = p + off;
    Element& e = n.elements[i];
    uint64_t kstart, klen, vlen = 0;
    if (n.leaf) {
      e.flags = load<uint32_t>(el);
      kstart = off + load<uint32_t>(el + 4);
      klen = load<uint32_t>(el + 8);
      vlen = load<uint32_t>(el + 12);
    } else {
      kstart = off + load<uint32_t>(el);
      klen = load<uint32_t>(el + 4);
      e.child = load<uint64_t>(el + 8);
    }
    if (kstart + klen + vlen > len) corrupt("element " + std::to_string(i) + " points outside the page");
    if (kstart < data_end) corrupt("element " + std::to_string(i) + " overlaps the data before it");
    data_end = kstart + klen + vlen;
    e.key.assign(p + kstart, klen);
    e.value.assign(p + kstart + klen, vlen);
    if (i > 0 && !(n.elements[i - 1].key < e.key)) corrupt("keys out of order at element " + std::to_string(i));
  }
  if (!n.leaf && n.elements.empty()) corrupt("branch page without elements");
  return n;
}

// New pages are written in runs of this many bytes at least (one pwrite each), not page by page.
constexpr size_t kPageRunBytes = 4u << 20;

// The pages of one update: reads the current tree, allocates new pages from the high-water mark
// and writes them in allocation order, which is file order, in large runs as they are made.
class Writer {
 public:
  Writer(const std::string& path, const BoltMeta& meta, bool sync)
      : path_(path), meta_(meta), next_pgid_(meta.high_water_pgid), run_pgid_(meta.high_water_pgid), sync_(sync) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) throw_errno("cannot open", path, errno);
  }
  ~Writer() {
    if (fd_ >= 0) ::close(fd_);
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  Node read_node(uint64_t pgid) {
    const uint64_t ps = meta_.page_size;
    std::string what = path_ + ": page " + std::to_string(pgid);
    if (pgid < 2 || pgid >= meta_.high_water_pgid) {
      throw Error(ErrorKind::kCorrupt,
                  what + ": outside the pages in use (high-water mark " + std::to_string(meta_.high_water_pgid) + ")");
    }
    std::string buf(ps, '\0');
    read_at(pgid * ps, buf.data(), ps);
    if (load<uint64_t>(buf.data()) != pgid) throw Error(ErrorKind::kCorrupt, what + ": header names another page");
    uint32_t overflow = load<uint32_t>(buf.data() + 12);
    if (overflow >= meta_.high_water_pgid - pgid)
      throw Error(ErrorKind::kCorrupt, what + ": overflow runs past the end");
    if (overflow > 0) {
      buf.resize((1 + uint64_t{overflow}) * ps);
      read_at((pgid + 1) * ps, buf.data() + ps, overflow * ps);
    }
    return parse_node(buf.data(), buf.size(), what);
  }

  // Writes `elements` as one or more new nodes of at most a page each (an element larger than a
  // page gets a node of its own, with overflow pages). Returns the branch elements that point at
  // them (key = each node's first key).
  std::vector<Element> write_nodes(const std::vector<Element>& elements, bool leaf) {
    const size_t ps = meta_.page_size;
    std::vector<Element> refs;
    size_t i = 0;
    do {
      size_t bytes = kPageHeaderSize, j = i;
      while (j < elements.size() && (j == i || bytes + element_bytes(elements[j], leaf) <= ps)) {
        bytes += element_bytes(elements[j], leaf);
        ++j;
      }
      if (j - i > 0xFFFF) j = i + 0xFFFF;  // count is 16 bits (unreachable with pages <= 64 KiB)
      uint64_t pages = (bytes + ps - 1) / ps;
      uint64_t pgid = next_pgid_;
      next_pgid_ += pages;
      const size_t at = run_.size();
      run_.resize(at + pages * ps, '\0');
      write_node_image(run_.data() + at, elements, i, j, leaf, pgid, static_cast<uint32_t>(pages - 1));
      if (run_.size() >= kPageRunBytes) write_run();
      Element ref;
      ref.key = j > i ? elements[i].key : std::string();
      ref.child = pgid;
      refs.push_back(std::move(ref));
      i = j;
    } while (i < elements.size());
    return refs;
  }

  // Stacks branch nodes over `refs` until one node is the root; returns its page.
  uint64_t root_over(std::vector<Element> refs) {
    while (refs.size() > 1) refs = write_nodes(refs, /*leaf=*/false);
    return refs.front().child;
  }

  // Rewrites the subtree at `pgid` with the `puts` in [begin, end) applied (each element replaces
  // the one with its key or is inserted; they are moved from). Returns the references to the new
  // node(s).
  using Puts = std::vector<Element>;  // sorted by key, each key once
  std::vector<Element> rewrite(uint64_t pgid, Puts::iterator begin, Puts::iterator end, int depth) {
    if (depth > kMaxDepth) throw Error(ErrorKind::kCorrupt, path_ + ": tree deeper than " + std::to_string(kMaxDepth));
    // A page reached twice is a cycle or a shared subtree: refused, which also bounds what the
    // levels of one rewrite hold in memory by the file's size.
    if (!rewritten_.insert(pgid).second) {
      throw Error(ErrorKind::kCorrupt, path_ + ": page " + std::to_string(pgid) + " is reached twice in the tree");
    }
    Node n = read_node(pgid);
    if (n.leaf) return write_nodes(merge(std::move(n.elements), begin, end), /*leaf=*/true);
    std::vector<Element> out;
    auto it = begin;
    for (size_t i = 0; i < n.elements.size(); ++i) {
      // Child i holds the keys below child i + 1's key (the first child also those below its own).
      auto stop = it;
      while (stop != end && (i + 1 == n.elements.size() || stop->key < n.elements[i + 1].key)) ++stop;
      if (stop == it) {
        out.push_back(std::move(n.elements[i]));
      } else {
        for (Element& e : rewrite(n.elements[i].child, it, stop, depth + 1)) out.push_back(std::move(e));
      }
      it = stop;
    }
    return write_nodes(out, /*leaf=*/false);
  }

  static std::vector<Element> merge(std::vector<Element> elements, Puts::iterator begin, Puts::iterator end) {
    std::vector<Element> out;
    out.reserve(elements.size() + static_cast<size_t>(std::distance(begin, end)));
    auto e = elements.begin();
    for (auto it = begin; it != end; ++it) {
      while (e != elements.end() && e->key < it->key) out.push_back(std::move(*e++));
      if (e != elements.end() && e->key == it->key) ++e;  // replaced
      out.push_back(std::move(*it));
    }
    while (e != elements.end()) out.push_back(std::move(*e++));
    return out;
  }

  // The leaf element of `key` in the tree at `pgid`, if any.
  std::optional<Element> find(uint64_t pgid, const std::string& key) {
    for (int depth = 0; depth <= kMaxDepth; ++depth) {
      Node n = read_node(pgid);
      if (n.leaf) {
        for (Element& e : n.elements) {
          if (e.key == key) return std::move(e);
        }
        return std::nullopt;
      }
      size_t pick = 0;
      for (size_t i = 0; i < n.elements.size(); ++i) {
        if (n.elements[i].key <= key) pick = i;
      }
      pgid = n.elements[pick].child;
    }
    throw Error(ErrorKind::kCorrupt, path_ + ": tree deeper than " + std::to_string(kMaxDepth));
  }

  // The new value (bucket header, plus the leaf image when inline) of a top-level bucket whose
  // current value is `old` (nullopt: a new bucket) after `change`.
  std::string bucket_value(const std::optional<std::string>& old, bool replace, Puts& puts) {
    uint64_t root = 0, sequence = 0;
    std::vector<Element> leaf;
    bool have_leaf = true;
    if (old) {
      if (old->size() < kBucketHeaderSize)
        throw Error(ErrorKind::kCorrupt, path_ + ": bucket value shorter than 16 bytes");
      root = load<uint64_t>(old->data());
      sequence = load<uint64_t>(old->data() + 8);
    }
    if (replace || !old) {
      // leaf stays empty: the puts are the whole contents
    } else if (root == 0) {
      Node inline_node =
          parse_node(old->data() + kBucketHeaderSize, old->size() - kBucketHeaderSize, path_ + ": inline bucket");
      if (!inline_node.leaf) throw Error(ErrorKind::kCorrupt, path_ + ": an inline bucket that is not a leaf");
      leaf = std::move(inline_node.elements);
    } else {
      Node n = read_node(root);
      if (n.leaf) {
        leaf = std::move(n.elements);
      } else {
        have_leaf = false;
      }
    }
    std::string value(kBucketHeaderSize, '\0');
    store<uint64_t>(value.data() + 8, sequence);
    if (!have_leaf) {
      store<uint64_t>(value.data(), root_over(rewrite(root, puts.begin(), puts.end(), 0)));
      return value;
    }
    leaf = merge(std::move(leaf), puts.begin(), puts.end());
    if (inlineable(leaf, meta_.page_size)) {
      size_t bytes = kPageHeaderSize;
      for (const Element& e : leaf) bytes += element_bytes(e, true);
      value += inline_leaf_image(leaf, bytes);
      return value;  // root 0: inline
    }
    store<uint64_t>(value.data(), root_over(write_nodes(leaf, true)));
    return value;
  }

  void commit(std::map<std::string, Puts>& puts_by_bucket, const std::map<std::string, bool>& replaced,
              uint64_t db_bytes) {
    const uint64_t ps = meta_.page_size;
    db_bytes_ = db_bytes;
    Puts root_puts;  // in name order, as the map iterates
    for (auto& [name, puts] : puts_by_bucket) {
      std::optional<Element> old = find(meta_.root_pgid, name);
      if (old && !(old->flags & kBucketLeafFlag)) {
        throw Error(ErrorKind::kCorrupt, path_ + ": top-level entry " + name + " is a key, not a bucket");
      }
      if (old && puts.empty() && !replaced.at(name)) continue;  // ensure_bucket of one that exists
      Element e;
      e.flags = kBucketLeafFlag;
      e.key = name;
      e.value = bucket_value(old ? std::optional<std::string>(old->value) : std::nullopt, replaced.at(name), puts);
      root_puts.push_back(std::move(e));
    }
    uint64_t new_root = root_over(rewrite(meta_.root_pgid, root_puts.begin(), root_puts.end(), 0));
    write_run();
    cut_after_database();
    if (::ftruncate(fd_, static_cast<off_t>(next_pgid_ * ps)) != 0) throw_errno("cannot resize", path_, errno);
    sync();

    std::string page(ps, '\0');
    const uint64_t txid = meta_.txid + 1;
    const uint64_t meta_page = txid % 2;
    store<uint64_t>(page.data(), meta_page);
    store<uint16_t>(page.data() + 8, kMetaFlag);
    char* m = page.data() + kPageHeaderSize;
    store<uint32_t>(m + kMetaMagic, kMagic);
    store<uint32_t>(m + kMetaVersion, kVersion);
    store<uint32_t>(m + kMetaPageSize, meta_.page_size);
    store<uint32_t>(m + kMetaFlags, meta_.flags);
    store<uint64_t>(m + kMetaRoot, new_root);
    store<uint64_t>(m + kMetaRootSequence, meta_.root_sequence);
    store<uint64_t>(m + kMetaFreelist, kNoFreelist);
    store<uint64_t>(m + kMetaHighWater, next_pgid_);
    store<uint64_t>(m + kMetaTxid, txid);
    store<uint64_t>(m + kMetaChecksum, fnv1a64(m, kMetaChecksum));
    write_at(meta_page * ps, page);
    sync();
  }

 private:
  void read_at(uint64_t off, char* out, size_t n) {
    if (!pread_exact(fd_, off, out, n, path_)) {
      throw Error(ErrorKind::kCorrupt, path_ + ": the file ends before offset " + std::to_string(off + n));
    }
  }

  void write_at(uint64_t off, const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t r = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(off + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw_errno("cannot write", path_, errno);
      done += static_cast<size_t>(r);
    }
  }

  // The pages made since the last run was written, at their place after the ones before them.
  void write_run() {
    if (run_.empty()) return;
    cut_after_database();
    write_at(run_pgid_ * meta_.page_size, run_);
    run_pgid_ += run_.size() / meta_.page_size;
    run_.clear();  // the capacity is kept for the next run
  }

  // Drops what follows the database (a snapshot's trailer) before the first new page is written
  // (the new pages go from the high-water mark on). Not earlier: an update whose new pages fit in
  // one run writes nothing before it has read all it needs of the tree.
  void cut_after_database() {
    if (cut_) return;
    const uint64_t in_use = meta_.high_water_pgid * meta_.page_size;
    if (::ftruncate(fd_, static_cast<off_t>(db_bytes_ ? std::min<uint64_t>(db_bytes_, in_use) : in_use)) != 0) {
      throw_errno("cannot resize", path_, errno);
    }
    cut_ = true;
  }

  void sync() {
    if (sync_ && ::fdatasync(fd_) != 0) throw_errno("cannot sync", path_, errno);
  }

  std::string path_;
  BoltMeta meta_;
  uint64_t next_pgid_;
  uint64_t run_pgid_;  // the first page of run_
  std::string run_;    // new pages not written yet: pages run_pgid_ .. next_pgid_ - 1
  bool sync_;
  uint64_t db_bytes_ = 0;  // the database's bytes in the file, as the update was given them
  bool cut_ = false;
  int fd_ = -1;
  std::set<uint64_t> rewritten_;  // pages rewrite() has read
};

}  // namespace

BoltUpdate::BoltUpdate(std::string path, uint64_t db_bytes, BoltSync sync)
    : path_(std::move(path)), db_bytes_(db_bytes), sync_(sync) {
  meta_ = BoltReader::open(path_, db_bytes_)->meta();
  if (db_bytes_ == 0) db_bytes_ = meta_.high_water_pgid * meta_.page_size;
}

void BoltUpdate::put(const std::string& bucket, const std::string& key, const std::string& value) {
  Change& c = changes_[bucket];
  if (!c.appended.empty())
    throw Error(ErrorKind::kInternal, "bbolt: put to bucket " + bucket + ", which takes appends");
  c.entries[key] = value;
}

void BoltUpdate::append(const std::string& bucket, std::string key, std::string value) {
  Change& c = changes_[bucket];
  if (!c.entries.empty() || c.replace) {
    throw Error(ErrorKind::kInternal, "bbolt: append to bucket " + bucket + ", which takes puts");
  }
  if (!c.appended.empty() && !(c.appended.back().first < key)) {
    throw Error(ErrorKind::kInternal, "bbolt: keys appended to bucket " + bucket + " out of order");
  }
  c.appended.emplace_back(std::move(key), std::move(value));
}

void BoltUpdate::ensure_bucket(const std::string& bucket) { changes_[bucket]; }

void BoltUpdate::replace_bucket(const std::string& bucket, std::map<std::string, std::string> entries) {
  Change& c = changes_[bucket];
  if (!c.appended.empty())
    throw Error(ErrorKind::kInternal, "bbolt: replace of bucket " + bucket + ", which takes appends");
  c.replace = true;
  c.entries = std::move(entries);
}

void BoltUpdate::commit() {
  std::map<std::string, Writer::Puts> puts;
  std::map<std::string, bool> replaced;
  for (auto& [bucket, change] : changes_) {
    if (bucket.empty()) throw Error(ErrorKind::kInvalidArgument, "bbolt: a bucket name cannot be empty");
    Writer::Puts& p = puts[bucket];
    p.reserve(change.entries.size() + change.appended.size());
    auto add = [&](std::string k, std::string v) {
      if (k.empty()) throw Error(ErrorKind::kInvalidArgument, "bbolt: a key cannot be empty (bucket " + bucket + ")");
      Element e;
      e.key = std::move(k);
      e.value = std::move(v);
      p.push_back(std::move(e));
    };
    for (auto& node : change.entries) add(node.first, std::move(node.second));
    for (auto& [k, v] : change.appended) add(std::move(k), std::move(v));
    replaced[bucket] = change.replace;
  }
  Writer w(path_, meta_, sync_ == BoltSync::kEachCommit);
  w.commit(puts, replaced, db_bytes_);
  changes_.clear();
}

}  // namespace etcdadm

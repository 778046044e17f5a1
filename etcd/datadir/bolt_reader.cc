// bbolt reader: see bolt_reader.h. Every number read from the file is checked before it is used as
// an offset, a size or a page id; all loads go through memcpy (the data may be unaligned, e.g. an
// inline bucket's leaf image inside a value).
//
// Memory: a walk keeps one page buffer per tree level on the recursion stack (the "cache along the
// current path"), plus a tiny shared cache of recently read single pages (the root page and bucket
// roots that path lookups read again and again). A page with overflow is never cached, so memory
// stays bounded by depth x page size + the overflow pages of one node.
//
// Cycles and shared subtrees: a tree walk may read at most meta.pgid pages in total (a valid tree
// reads every page at most once), and the depth is limited to kMaxDepth, so a page that points back
// to an ancestor, or many branch elements pointing at the same child, end in kCorrupt instead of an
// endless or exponential walk.
#include "etcd/datadir/bolt_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>

#include "common/error.h"
#include "common/fs.h"
#include "etcd/datadir/bolt_format.h"

namespace etcdadm {
namespace {

using namespace bolt;

constexpr size_t kCacheSlots = 8;

// Where the bytes come from: a file read with pread, or a buffer in memory (tests, fuzzing).
class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at off (the caller has checked off + n <= size()).
  virtual void read(uint64_t off, size_t n, char* out) const = 0;
};

class FileSource : public Source {
 public:
  explicit FileSource(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw_errno("cannot open", path, errno);
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      int err = errno;
      ::close(fd_);
      throw_errno("cannot stat", path, err);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw Error(ErrorKind::kInvalidArgument, path + ": not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  uint64_t size() const override { return size_; }
  // Sequential reads (a walk over leaf pages that bbolt allocated one after another) are served from
  // a read-ahead window that doubles up to kMaxWindow while reads stay sequential; a jump elsewhere
  // reads just what was asked. Cuts the syscalls of a full walk ~100x at a bounded, constant cost.
  void read(uint64_t off, size_t n, char* out) const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (off >= win_off_ && off - win_off_ <= win_len_ && n <= win_len_ - (off - win_off_)) {
      std::memcpy(out, win_.data() + (off - win_off_), n);
      next_ = off + n;
      return;
    }
    ahead_ = off == next_ ? std::min(std::max(ahead_ * 2, kMinWindow), kMaxWindow) : 0;
    next_ = off + n;
    if (n >= ahead_) {
      pread_full(off, n, out);
      return;
    }
    size_t want = static_cast<size_t>(std::min<uint64_t>(ahead_, size_ - off));
    win_.resize(kMaxWindow);
    win_len_ = 0;
    pread_full(off, want, win_.data());
    win_off_ = off;
    win_len_ = want;
    std::memcpy(out, win_.data(), n);
  }

  void pread_full(uint64_t off, size_t n, char* out) const {
    if (!pread_exact(fd_, off, out, n, path_)) {
      throw Error(ErrorKind::kCorrupt,
                  path_ + ": short read at offset " + std::to_string(off) + " (the file shrank while being read?)");
    }
  }

 private:
  static constexpr size_t kMinWindow = 64 * 1024;
  static constexpr size_t kMaxWindow = 512 * 1024;
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  mutable std::mutex mu_;
  mutable std::vector<char> win_;
  mutable uint64_t win_off_ = 0;
  mutable size_t win_len_ = 0;
  mutable uint64_t next_ = UINT64_MAX;  // where the previous read ended
  mutable size_t ahead_ = 0;            // the current read-ahead size, 0 = none
};

class MemorySource : public Source {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t off, size_t n, char* out) const override { std::memcpy(out, bytes_.data() + off, n); }

 private:
  std::string bytes_;
};

using PageBuf = std::shared_ptr<const std::string>;

// A view of a node: a page (pgid != 0) or an inline bucket's leaf image (inline_bucket). `hold`
// keeps the bytes alive.
struct Node {
  PageBuf hold;
  const char* p = nullptr;
  size_t len = 0;
  uint64_t pgid = 0;  // the page, or for an inline bucket the page holding it
  bool inline_bucket = false;
  uint16_t flags() const { return load<uint16_t>(p + 8); }
  uint16_t count() const { return load<uint16_t>(p + 10); }
};

struct BranchElem {
  std::string_view key;
  uint64_t child;
};

struct LeafElem {
  uint32_t flags;
  std::string_view key;
  std::string_view value;
};

struct Hit {
  uint32_t flags;
  PageBuf value;  // a copy of the value
};

std::string join_path(const std::vector<std::string>& path, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (i ? "/" : "") + path[i];
  return s;
}

}  // namespace

struct BoltReader::Impl {
  std::string name;
  std::unique_ptr<Source> src;
  uint64_t size = 0;  // bytes that belong to the database
  BoltMeta meta;

  mutable std::mutex cache_mu;
  mutable std::deque<std::pair<uint64_t, PageBuf>> cache;  // most recent first

  [[noreturn]] void corrupt(uint64_t pgid, const std::string& what) const {
    throw Error(ErrorKind::kCorrupt, name + ": page " + std::to_string(pgid) + ": " + what);
  }

  std::string where(const Node& n) const { return n.inline_bucket ? "inline bucket: " : ""; }

  // Checks the header fields every node (page or inline image) must satisfy.
  void check_node(const Node& n) const {
    if (n.len < kPageHeaderSize) corrupt(n.pgid, where(n) + "shorter than a page header");
    uint16_t f = n.flags();
    if (n.inline_bucket ? f != kLeafFlag : (f != kLeafFlag && f != kBranchFlag)) {
      corrupt(n.pgid, where(n) + "flags 0x" + to_hex(f) + " where a " + (n.inline_bucket ? "leaf" : "branch or leaf") +
                          " was expected");
    }
    uint64_t need = kPageHeaderSize + uint64_t{n.count()} * kElementSize;
    if (need > n.len) {
      corrupt(n.pgid,
              where(n) + std::to_string(n.count()) + " elements do not fit in " + std::to_string(n.len) + " bytes");
    }
  }

  static std::string to_hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
  }

  BranchElem branch_elem(const Node& n, size_t i) const {
    uint64_t off = kPageHeaderSize + i * kElementSize;
    const char* e = n.p + off;
    uint64_t start = off + load<uint32_t>(e);
    uint64_t end = start + load<uint32_t>(e + 4);
    if (end > n.len) corrupt(n.pgid, where(n) + "branch element " + std::to_string(i) + ": key outside the page");
    return {std::string_view(n.p + start, end - start), load<uint64_t>(e + 8)};
  }

  LeafElem leaf_elem(const Node& n, size_t i) const {
    uint64_t off = kPageHeaderSize + i * kElementSize;
    const char* e = n.p + off;
    uint32_t flags = load<uint32_t>(e);
    uint64_t kstart = off + load<uint32_t>(e + 4);
    uint64_t vstart = kstart + load<uint32_t>(e + 8);
    uint64_t vend = vstart + load<uint32_t>(e + 12);
    if (vend > n.len) {
      corrupt(n.pgid, where(n) + "leaf element " + std::to_string(i) + ": key/value outside the page");
    }
    if ((flags & kBucketLeafFlag) && vend - vstart < kBucketHeaderSize) {
      corrupt(n.pgid, where(n) + "leaf element " + std::to_string(i) + ": bucket value shorter than 16 bytes");
    }
    return {flags, std::string_view(n.p + kstart, vstart - kstart), std::string_view(n.p + vstart, vend - vstart)};
  }

  // Keys inside a node must be strictly ascending (bbolt keeps them sorted and unique); lookups
  // rely on it.
  void check_order(const Node& n, size_t i, std::string_view prev, std::string_view key) const {
    if (i > 0 && !(prev < key)) corrupt(n.pgid, where(n) + "element " + std::to_string(i) + ": keys out of order");
  }

  PageBuf cached(uint64_t pgid) const {
    std::lock_guard<std::mutex> lock(cache_mu);
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (it->first == pgid) {
        auto entry = *it;
        cache.erase(it);
        cache.push_front(entry);
        return entry.second;
      }
    }
    return nullptr;
  }

  void remember(uint64_t pgid, const PageBuf& buf) const {
    std::lock_guard<std::mutex> lock(cache_mu);
    cache.emplace_front(pgid, buf);
    if (cache.size() > kCacheSlots) cache.pop_back();
  }

  // Reads a branch or leaf page. `from`: the page that referenced it (for messages). `budget`, when
  // given, counts the pages a walk may still read.
  Node read_page(uint64_t pgid, uint64_t from, uint64_t* budget) const {
    const uint64_t ps = meta.page_size;
    if (pgid < 2) corrupt(from, "reference to page " + std::to_string(pgid) + " (a meta page) as a tree page");
    if (pgid >= meta.high_water_pgid) {
      corrupt(from, "reference to page " + std::to_string(pgid) + " at or beyond the high-water mark " +
                        std::to_string(meta.high_water_pgid));
    }
    PageBuf buf = cached(pgid);
    if (!buf) {
      auto s = std::make_shared<std::string>(ps, '\0');
      src->read(pgid * ps, ps, s->data());
      uint64_t id = load<uint64_t>(s->data());
      if (id != pgid) corrupt(pgid, "header names page " + std::to_string(id));
      uint32_t overflow = load<uint32_t>(s->data() + 12);
      if (uint64_t{overflow} >= meta.high_water_pgid - pgid) {
        corrupt(pgid, "overflow of " + std::to_string(overflow) + " pages runs past the high-water mark " +
                          std::to_string(meta.high_water_pgid));
      }
      if (overflow > 0) {
        s->resize((1 + uint64_t{overflow}) * ps);
        src->read((pgid + 1) * ps, overflow * ps, s->data() + ps);
      }
      buf = std::move(s);
      if (overflow == 0) remember(pgid, buf);
    }
    uint64_t pages = buf->size() / ps;
    if (budget) {
      if (*budget < pages) corrupt(pgid, "tree reads more pages than the file has (a cycle or shared subtree)");
      *budget -= pages;
    }
    Node n{buf, buf->data(), buf->size(), pgid, false};
    check_node(n);
    return n;
  }

  // The root node of a bucket given its bucket value (a copy held by `hold`), found on page `from`.
  Node open_bucket(const PageBuf& hold, uint64_t from, uint64_t* budget) const {
    if (hold->size() < kBucketHeaderSize) corrupt(from, "bucket value shorter than 16 bytes");
    uint64_t root = load<uint64_t>(hold->data());
    if (root != 0) return read_page(root, from, budget);
    Node n{hold, hold->data() + kBucketHeaderSize, hold->size() - kBucketHeaderSize, from, true};
    check_node(n);
    return n;
  }

  Node root_bucket(uint64_t* budget) const { return read_page(meta.root_pgid, 0, budget); }

  // Looks `key` up in the tree rooted at `n`.
  std::optional<Hit> find(Node n, std::string_view key) const {
    for (int depth = 0;; ++depth) {
      if (depth > kMaxDepth) corrupt(n.pgid, "tree deeper than " + std::to_string(kMaxDepth) + " levels");
      const size_t count = n.count();
      if (n.flags() == kLeafFlag) {
        for (size_t i = 0; i < count; ++i) {
          LeafElem e = leaf_elem(n, i);
          if (e.key == key) return Hit{e.flags, std::make_shared<std::string>(e.value)};
          if (e.key > key) break;
        }
        return std::nullopt;
      }
      if (count == 0) corrupt(n.pgid, "branch page without elements");
      // bbolt: the last element whose key <= key, or the first one.
      size_t pick = 0;
      std::string_view prev;
      for (size_t i = 0; i < count; ++i) {
        BranchElem e = branch_elem(n, i);
        check_order(n, i, prev, e.key);
        prev = e.key;
        if (e.key <= key) pick = i;
      }
      n = read_page(branch_elem(n, pick).child, n.pgid, nullptr);
    }
  }

  // Visits the leaf elements below `n` in key order. Returns false when the visitor stopped.
  bool walk(const Node& n, int depth, uint64_t* budget, const BoltVisitor& visit) const {
    if (depth > kMaxDepth) corrupt(n.pgid, "tree deeper than " + std::to_string(kMaxDepth) + " levels");
    const size_t count = n.count();
    std::string_view prev;
    if (n.flags() == kLeafFlag) {
      for (size_t i = 0; i < count; ++i) {
        LeafElem e = leaf_elem(n, i);
        check_order(n, i, prev, e.key);
        prev = e.key;
        if (!visit(e.key, e.value, (e.flags & kBucketLeafFlag) != 0)) return false;
      }
      return true;
    }
    if (count == 0) corrupt(n.pgid, "branch page without elements");
    for (size_t i = 0; i < count; ++i) {
      BranchElem e = branch_elem(n, i);
      check_order(n, i, prev, e.key);
      prev = e.key;
      Node child = read_page(e.child, n.pgid, budget);
      if (!walk(child, depth + 1, budget, visit)) return false;
    }
    return true;
  }

  // The root node of the bucket at `path`.
  Node resolve(const std::vector<std::string>& path, uint64_t* budget) const {
    Node n = root_bucket(path.empty() ? budget : nullptr);
    for (size_t i = 0; i < path.size(); ++i) {
      std::optional<Hit> hit = find(n, path[i]);
      if (!hit) throw Error(ErrorKind::kNotFound, name + ": bucket " + join_path(path, i + 1) + " does not exist");
      if (!(hit->flags & kBucketLeafFlag)) {
        throw Error(ErrorKind::kNotFound, name + ": " + join_path(path, i + 1) + " is a key, not a bucket");
      }
      n = open_bucket(hit->value, n.pgid, i + 1 == path.size() ? budget : nullptr);
    }
    return n;
  }

  // Parses the meta on page `which` from `buf` (kMetaEnd bytes read at which * page size, where
  // `ps` is the page size it is expected to state, 0 = any). Returns a reason when invalid.
  std::optional<std::string> parse_meta(const char* buf, int which, uint32_t ps, BoltMeta* out) const {
    uint64_t id = load<uint64_t>(buf);
    if (id != static_cast<uint64_t>(which)) return "header names page " + std::to_string(id);
    if (load<uint16_t>(buf + 8) != kMetaFlag) return "not flagged as a meta page";
    const char* m = buf + kPageHeaderSize;
    if (load<uint32_t>(m + kMetaMagic) != kMagic) return "bad magic";
    if (load<uint32_t>(m + kMetaVersion) != kVersion)
      return "unsupported version " + std::to_string(load<uint32_t>(m + kMetaVersion));
    if (load<uint64_t>(m + kMetaChecksum) != fnv1a64(m, kMetaChecksum)) return "checksum mismatch";
    BoltMeta r;
    r.page_size = load<uint32_t>(m + kMetaPageSize);
    r.flags = load<uint32_t>(m + kMetaFlags);
    r.root_sequence = load<uint64_t>(m + kMetaRootSequence);
    r.version = kVersion;
    r.root_pgid = load<uint64_t>(m + kMetaRoot);
    r.freelist_pgid = load<uint64_t>(m + kMetaFreelist);
    r.high_water_pgid = load<uint64_t>(m + kMetaHighWater);
    r.txid = load<uint64_t>(m + kMetaTxid);
    r.meta_page = which;
    if (r.page_size < kMinPageSize || r.page_size > kMaxPageSize || (r.page_size & (r.page_size - 1)) != 0) {
      return "implausible page size " + std::to_string(r.page_size);
    }
    if (ps != 0 && r.page_size != ps) {
      return "page size " + std::to_string(r.page_size) + " differs from " + std::to_string(ps);
    }
    if (r.high_water_pgid < 3 || r.high_water_pgid > size / r.page_size) {
      return "high-water mark " + std::to_string(r.high_water_pgid) + " x page size " + std::to_string(r.page_size) +
             " does not fit in the " + std::to_string(size) + " bytes of the file";
    }
    if (r.root_pgid < 2 || r.root_pgid >= r.high_water_pgid) {
      return "root page " + std::to_string(r.root_pgid) + " outside the pages in use";
    }
    *out = r;
    return std::nullopt;
  }

  void load_meta() {
    if (size < kMetaEnd) corrupt(0, "file of " + std::to_string(size) + " bytes is too small for a meta page");
    std::array<char, kMetaEnd> buf{};
    src->read(0, kMetaEnd, buf.data());
    BoltMeta m0, m1;
    std::optional<std::string> why0 = parse_meta(buf.data(), 0, 0, &m0);
    std::optional<std::string> why1 = "not found";
    if (!why0) {
      if (uint64_t{m0.page_size} + kMetaEnd <= size) {
        src->read(m0.page_size, kMetaEnd, buf.data());
        why1 = parse_meta(buf.data(), 1, m0.page_size, &m1);
      }
    } else {
      // Meta 0 is unusable: look for meta 1 at every plausible page size.
      for (uint32_t ps = kMinPageSize; ps <= kMaxPageSize && why1; ps *= 2) {
        if (uint64_t{ps} + kMetaEnd > size) break;
        src->read(ps, kMetaEnd, buf.data());
        BoltMeta cand;
        std::optional<std::string> w = parse_meta(buf.data(), 1, ps, &cand);
        if (!w) {
          m1 = cand;
          why1.reset();
        } else if (ps == 4096 || *why1 == "not found") {
          why1 = w;  // report the reason at the default page size
        }
      }
    }
    if (why0 && why1) {
      throw Error(ErrorKind::kCorrupt,
                  name + ": page 0: invalid meta (" + *why0 + "); page 1: invalid meta (" + *why1 + ")");
    }
    if (why0)
      meta = m1;
    else if (why1)
      meta = m0;
    else
      meta = m1.txid > m0.txid ? m1 : m0;
  }
};

std::unique_ptr<BoltReader> BoltReader::make(std::unique_ptr<Impl> impl, uint64_t file_size_limit) {
  impl->size = impl->src->size();
  if (file_size_limit != 0) impl->size = std::min(impl->size, file_size_limit);
  impl->load_meta();
  std::unique_ptr<BoltReader> r(new BoltReader());
  r->meta_ = impl->meta;
  r->impl_ = std::move(impl);
  return r;
}

std::unique_ptr<BoltReader> BoltReader::open(const std::string& path, uint64_t file_size_limit) {
  auto impl = std::make_unique<Impl>();
  impl->name = path;
  impl->src = std::make_unique<FileSource>(path);
  return make(std::move(impl), file_size_limit);
}

std::unique_ptr<BoltReader> BoltReader::open_memory(std::string_view bytes, uint64_t file_size_limit) {
  auto impl = std::make_unique<Impl>();
  impl->name = "<memory>";
  impl->src = std::make_unique<MemorySource>(bytes);
  return make(std::move(impl), file_size_limit);
}

BoltReader::~BoltReader() = default;

void BoltReader::for_each(const std::vector<std::string>& path, const BoltVisitor& visit) const {
  uint64_t budget = meta_.high_water_pgid;
  Node n = impl_->resolve(path, &budget);
  impl_->walk(n, 0, &budget, visit);
}

bool BoltReader::has_bucket(const std::vector<std::string>& path) const {
  try {
    impl_->resolve(path, nullptr);
    return true;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound) return false;
    throw;
  }
}

std::optional<std::pair<std::string, std::string>> BoltReader::last(const std::vector<std::string>& path) const {
  Node n = impl_->resolve(path, nullptr);
  for (int depth = 0;; ++depth) {
    if (depth > kMaxDepth) impl_->corrupt(n.pgid, "tree deeper than " + std::to_string(kMaxDepth) + " levels");
    const size_t count = n.count();
    if (n.flags() == kLeafFlag) {
      if (count == 0) return std::nullopt;
      LeafElem e = impl_->leaf_elem(n, count - 1);
      return std::make_pair(std::string(e.key), std::string(e.value));
    }
    if (count == 0) impl_->corrupt(n.pgid, "branch page without elements");
    n = impl_->read_page(impl_->branch_elem(n, count - 1).child, n.pgid, nullptr);
  }
}

std::optional<std::string> BoltReader::get(const std::vector<std::string>& path, std::string_view key) const {
  Node n = impl_->resolve(path, nullptr);
  std::optional<Hit> hit = impl_->find(n, key);
  if (!hit || (hit->flags & kBucketLeafFlag)) return std::nullopt;
  return *hit->value;
}

}  // namespace etcdadm

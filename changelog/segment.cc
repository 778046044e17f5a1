#include "changelog/segment.h"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/byte_sink.h"
#include "common/error.h"
#include "common/sha256.h"
#include "store/encryption.h"

namespace etcdadm::changelog {

namespace {

void put_uvarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// A uvarint at `pos` of `buf`: its value and length, nullopt when `buf` ends inside it.
std::optional<std::pair<uint64_t, size_t>> get_uvarint(const std::string& buf, size_t pos, const std::string& what) {
  uint64_t v = 0;
  for (size_t i = 0; i < 10; ++i) {
    if (pos + i >= buf.size()) return std::nullopt;
    auto b = static_cast<uint8_t>(buf[pos + i]);
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return std::pair{v, i + 1};
  }
  throw SegmentError(ErrorKind::kCorrupt, what + ": a record length that is no varint");
}

bool all_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The fixed-width decimal field of a log key's name at [pos, pos + width): digits only, in range.
std::optional<int64_t> decimal_field(const std::string& file, size_t pos, size_t width) {
  const char* begin = file.data() + pos;
  const char* end = begin + width;
  if (pos + width > file.size() || !std::all_of(begin, end, [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// The plaintext side of a segment: magic, then length-prefixed records, checked to be exactly
// first..last of the segment's name.
class RecordParser : public ByteSink {
 public:
  RecordParser(const SegmentName& name, std::string what, const std::function<void(const Record&)>& record)
      : name_(name), what_(std::move(what)), record_(record) {}

  void write(const uint8_t* d, size_t n) override {
    buf_.append(reinterpret_cast<const char*>(d), n);
    if (!magic_seen_) {
      size_t magic = std::strlen(kSegmentMagic);
      if (buf_.size() < magic) {
        if (std::memcmp(buf_.data(), kSegmentMagic, buf_.size()) != 0)
          bad("it does not start with the change log magic");
        return;
      }
      if (buf_.compare(0, magic, kSegmentMagic) != 0) bad("it does not start with the change log magic");
      pos_ = magic;
      magic_seen_ = true;
    }
    for (;;) {
      auto len = get_uvarint(buf_, pos_, what_);
      if (!len) break;
      if (len->first > (64u << 20)) bad("a record longer than 64 MiB");
      if (buf_.size() - pos_ - len->second < len->first) break;
      Record r;
      if (!r.ParseFromArray(buf_.data() + pos_ + len->second, static_cast<int>(len->first)))
        bad("a record that does not parse");
      pos_ += len->second + len->first;
      int64_t expected = last_ == 0 ? name_.first_revision : last_ + 1;
      if (r.revision() != expected) {
        bad("revision " + std::to_string(r.revision()) + " where " + std::to_string(expected) + " belongs");
      }
      if (r.events_size() == 0) bad("revision " + std::to_string(r.revision()) + " has no events");
      last_ = r.revision();
      record_(r);
    }
    if (pos_ > (1u << 20)) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
  }

  void finish() {
    if (!magic_seen_) bad("it ends inside the change log magic");
    if (pos_ != buf_.size()) bad("it ends inside a record");
    if (last_ != name_.last_revision) {
      bad("it ends at revision " + std::to_string(last_) + ", its name says " + std::to_string(name_.last_revision));
    }
  }

 private:
  [[noreturn]] void bad(const std::string& why) {
    throw SegmentError(ErrorKind::kCorrupt, what_ + " is damaged: " + why);
  }

  const SegmentName& name_;
  std::string what_;
  const std::function<void(const Record&)>& record_;
  std::string buf_;
  size_t pos_ = 0;
  bool magic_seen_ = false;
  int64_t last_ = 0;
};

}  // namespace

std::string SegmentName::key() const {
  char range[80];
  std::snprintf(range, sizeof range, "%020" PRId64 "-%020" PRId64 "-%013" PRId64 "-", first_revision, last_revision,
                last_observed_ms);
  return std::string(kChangeLogDir) + "/" + cluster_id + "/" + range + sha256 + (key_id.empty() ? "" : "-" + key_id) +
         (tag.empty() ? "" : "-m" + tag) + ".seg" + compression_extension(compression) +
         (encrypted ? kAgeFileExtension : "");
}

std::string segment_tag_message(const SegmentName& segment) {
  return "etcdadm-changelog-segment/1\n" + segment.cluster_id + "\n" + std::to_string(segment.first_revision) + "\n" +
         std::to_string(segment.last_revision) + "\n" + std::to_string(segment.last_observed_ms) + "\n" +
         segment.sha256 + "\n";
}

namespace {

// changelog/<cluster>/<file> -> {cluster, file}; nullopt unless the cluster is hex.
std::optional<std::pair<std::string, std::string>> split_log_key(const std::string& key) {
  const std::string prefix = std::string(kChangeLogDir) + "/";
  if (key.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  size_t slash = key.find('/', prefix.size());
  if (slash == std::string::npos) return std::nullopt;
  std::string cluster = key.substr(prefix.size(), slash - prefix.size());
  if (cluster.empty() || !all_hex(cluster)) return std::nullopt;
  return std::pair{cluster, key.substr(slash + 1)};
}

}  // namespace

std::optional<SegmentName> parse_segment_key(const std::string& key) {
  // changelog/<cluster>/<20>-<20>-<13>-<64>[-<16>][-m<32>].seg<ext>
  auto split = split_log_key(key);
  if (!split) return std::nullopt;
  SegmentName s;
  s.cluster_id = split->first;
  const std::string& file = split->second;
  const size_t fixed = 20 + 1 + 20 + 1 + 13 + 1 + 64;
  if (file.size() < fixed + 4 || file[20] != '-' || file[41] != '-' || file[55] != '-') return std::nullopt;
  const auto first = decimal_field(file, 0, 20), last = decimal_field(file, 21, 20), ms = decimal_field(file, 42, 13);
  s.sha256 = file.substr(56, 64);
  if (!first || !last || !ms || !all_hex(s.sha256)) return std::nullopt;
  s.first_revision = *first;
  s.last_revision = *last;
  s.last_observed_ms = *ms;
  std::string ext = file.substr(fixed);
  if (ext.size() > 17 && ext[0] == '-' && ext[1] != 'm') {  // -<key id>
    s.key_id = ext.substr(1, 16);
    if (!all_hex(s.key_id)) return std::nullopt;
    ext = ext.substr(17);
  }
  if (const size_t tagged = 2 + kSegmentTagHexDigits; ext.size() > tagged && ext.compare(0, 2, "-m") == 0) {
    s.tag = ext.substr(2, kSegmentTagHexDigits);
    if (!all_hex(s.tag)) return std::nullopt;
    ext = ext.substr(tagged);
  }
  if (ext.size() >= 4 && ext.compare(ext.size() - 4, 4, kAgeFileExtension) == 0) {
    s.encrypted = true;
    ext.resize(ext.size() - 4);
  }
  if (!s.key_id.empty() && !s.encrypted) return std::nullopt;
  if (ext == ".seg")
    s.compression = Compression::kNone;
  else if (ext == ".seg.gz")
    s.compression = Compression::kGzip;
  else if (ext == ".seg.zst")
    s.compression = Compression::kZstd;
  else
    return std::nullopt;
  if (s.first_revision < 1 || s.last_revision < s.first_revision) return std::nullopt;
  return s;
}

std::string LateWindow::key() const {
  char name[96];
  std::snprintf(name, sizeof name, "%020" PRId64 "-%020" PRId64 "-%013" PRId64 "-%013" PRId64 ".late", first_revision,
                last_revision, committed_after_ms, received_ms);
  return std::string(kChangeLogDir) + "/" + cluster_id + "/" + name;
}

std::optional<LateWindow> parse_late_key(const std::string& key) {
  // changelog/<cluster>/<20>-<20>-<13>-<13>.late
  auto split = split_log_key(key);
  if (!split) return std::nullopt;
  LateWindow w;
  w.cluster_id = split->first;
  const std::string& file = split->second;
  if (file.size() != 20 + 1 + 20 + 1 + 13 + 1 + 13 + 5 || file[20] != '-' || file[41] != '-' || file[55] != '-' ||
      file.compare(69, 5, ".late") != 0) {
    return std::nullopt;
  }
  const auto first = decimal_field(file, 0, 20), last = decimal_field(file, 21, 20),
             after = decimal_field(file, 42, 13), received = decimal_field(file, 56, 13);
  if (!first || !last || !after || !received) return std::nullopt;
  w.first_revision = *first;
  w.last_revision = *last;
  w.committed_after_ms = *after;
  w.received_ms = *received;
  if (w.first_revision < 1 || w.last_revision < w.first_revision || w.received_ms < w.committed_after_ms)
    return std::nullopt;
  return w;
}

std::vector<SegmentName> list_segments(BlobStore& store, const std::string& cluster_id, bool* heartbeat_listed,
                                       std::vector<LateWindow>* late) {
  std::vector<SegmentName> out;
  const std::string dir = std::string(kChangeLogDir) + "/" + cluster_id + "/";
  if (heartbeat_listed != nullptr) *heartbeat_listed = false;
  if (late != nullptr) late->clear();
  for (const auto& blob : store.list(dir)) {
    if (auto s = parse_segment_key(blob.key); s && s->cluster_id == cluster_id) {
      out.push_back(std::move(*s));
    } else if (heartbeat_listed != nullptr && blob.key == dir + kHeartbeatFile) {
      *heartbeat_listed = true;
    } else if (auto w = late != nullptr ? parse_late_key(blob.key) : std::nullopt; w && w->cluster_id == cluster_id) {
      late->push_back(std::move(*w));
    }
  }
  std::sort(out.begin(), out.end(), [](const SegmentName& a, const SegmentName& b) {
    return a.first_revision != b.first_revision ? a.first_revision < b.first_revision
                                                : a.last_revision < b.last_revision;
  });
  if (late != nullptr) {
    std::sort(late->begin(), late->end(),
              [](const LateWindow& a, const LateWindow& b) { return a.first_revision < b.first_revision; });
  }
  return out;
}

// ---- writing ----

class SegmentBuilder::Impl {
 public:
  Impl(Compression c, const std::optional<age::Recipients>& to)
      : compression(c), encrypted(to.has_value()), stored(&bytes) {
    if (to) encryptor = age::make_encryptor(*to, stored);
    encoder = make_encoder(c, -1, encryptor ? static_cast<ByteSink&>(*encryptor) : stored);
    encoder->write(reinterpret_cast<const uint8_t*>(kSegmentMagic), std::strlen(kSegmentMagic));
  }
  Compression compression;
  bool encrypted;
  StringSink bytes;
  HashingSink stored;
  std::unique_ptr<StreamCodec> encryptor;
  std::unique_ptr<StreamCodec> encoder;
  std::string scratch;
};

SegmentBuilder::SegmentBuilder(Compression compression, std::optional<age::Recipients> encrypt_to)
    : impl_(std::make_unique<Impl>(compression, encrypt_to)) {}

SegmentBuilder::~SegmentBuilder() = default;

void SegmentBuilder::add(const Record& record) {
  if (!impl_) throw Error(ErrorKind::kInternal, "change log segment written already");
  if (first_ != 0 && record.revision() != last_ + 1) {
    throw Error(ErrorKind::kInternal,
                "change log record " + std::to_string(record.revision()) + " does not follow " + std::to_string(last_));
  }
  auto& s = impl_->scratch;
  s.clear();
  std::string body = record.SerializeAsString();
  put_uvarint(s, body.size());
  s += body;
  impl_->encoder->write(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  if (first_ == 0) first_ = record.revision();
  last_ = record.revision();
  last_observed_ms_ = record.observed_unix_micros() / 1000;
  plaintext_bytes_ += s.size();
}

SegmentName SegmentBuilder::write(BlobStore& store, const std::string& cluster_id, const std::string& key_id,
                                  const SegmentTagger& tagger) {
  if (!impl_ || empty()) throw Error(ErrorKind::kInternal, "an empty change log segment");
  impl_->encoder->finish();
  if (impl_->encryptor) impl_->encryptor->finish();
  SegmentName name;
  name.cluster_id = cluster_id;
  name.first_revision = first_;
  name.last_revision = last_;
  name.last_observed_ms = last_observed_ms_;
  name.sha256 = to_hex(impl_->stored.finish());
  name.compression = impl_->compression;
  name.encrypted = impl_->encrypted;
  if (name.encrypted) name.key_id = key_id;
  if (tagger) {
    name.tag = tagger(segment_tag_message(name));
    if (!name.tag.empty() && (name.tag.size() != kSegmentTagHexDigits || !all_hex(name.tag)))
      throw Error(ErrorKind::kInternal,
                  "a change log segment's tag is not " + std::to_string(kSegmentTagHexDigits) + " hex digits");
  }
  auto writer = store.create(name.key(), /*overwrite=*/false);
  const std::string& bytes = impl_->bytes.out;
  writer->write(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  writer->commit();
  stored_bytes_ = bytes.size();
  impl_.reset();
  return name;
}

// ---- reading ----

std::string segment_description(BlobStore& store, const SegmentName& segment) {
  return "change log segment " + segment.key() + " in " + store.url();
}

std::string read_segment_bytes(BlobStore& store, const SegmentName& segment) {
  const std::string what = segment_description(store, segment);
  // Whole, then hashed: damage is named before any decryption or decompression is tried. A
  // segment is at most --segment-size of plaintext, compressed.
  std::string stored;
  try {
    stored = store.read_small(segment.key(), 1u << 30);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound)
      throw SegmentError(ErrorKind::kCorrupt, what + " is missing (listed, then gone)");
    throw;
  }
  Sha256 h;
  h.update(reinterpret_cast<const uint8_t*>(stored.data()), stored.size());
  std::string sha = to_hex(h.finish());
  if (sha != segment.sha256) {
    throw SegmentError(ErrorKind::kCorrupt,
                       what + " is damaged: its bytes have SHA-256 " + sha + ", its name says " + segment.sha256,
                       "the segment was modified or damaged in the store; restore to a revision before it");
  }
  return stored;
}

void read_segment(const BackupStore& store, const SegmentName& segment,
                  const std::function<void(const Record&)>& record) {
  const std::string what = segment_description(*store, segment);
  std::string stored = read_segment_bytes(*store, segment);
  RecordParser parser(segment, what, record);
  auto decoder = make_decoder(segment.compression, parser);
  std::unique_ptr<StreamCodec> decryptor;
  if (segment.encrypted) {
    const age::Identities* keys = store.keys();
    if (keys == nullptr) {
      throw SegmentError(
          ErrorKind::kAuth, what + " is encrypted (age) and no key was given",
          "give the identity file (or passphrase) of the store's recipients with --identity / --passphrase-file");
    }
    decryptor = age::make_decryptor(*keys, *decoder);
  }
  ByteSink& first = decryptor ? static_cast<ByteSink&>(*decryptor) : *decoder;
  try {
    first.write(reinterpret_cast<const uint8_t*>(stored.data()), stored.size());
    if (decryptor) decryptor->finish();
    decoder->finish();
  } catch (const SegmentError&) {
    throw;  // the parser's own, naming the segment
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kAuth) throw SegmentError(e.wrap(what));
    throw SegmentError(e.wrap(what + " is damaged"));
  }
  parser.finish();
}

void read_segment_or_twin(const BackupStore& store, const SegmentName& segment, const std::vector<SegmentName>& all,
                          const std::function<void(const Record&)>& record) {
  try {
    read_segment(store, segment, record);
  } catch (const SegmentError& e) {
    if (e.kind() != ErrorKind::kAuth) throw;
    for (const auto& twin : all) {
      if (twin.first_revision != segment.first_revision || twin.last_revision != segment.last_revision ||
          twin.key() == segment.key()) {
        continue;
      }
      try {
        read_segment(store, twin, record);
        return;
      } catch (const SegmentError& other) {
        if (other.kind() != ErrorKind::kAuth) throw;
      }
    }
    throw;
  }
}

LogChain chain_from(const std::vector<SegmentName>& segments, int64_t from_revision, int64_t to_revision) {
  LogChain chain;
  chain.from_revision = from_revision;
  chain.reaches = from_revision;
  int64_t next = from_revision + 1;
  for (;;) {
    if (to_revision != 0 && chain.reaches >= to_revision) break;
    const SegmentName* best = nullptr;
    for (const auto& s : segments) {
      if (s.first_revision <= next && s.last_revision >= next &&
          (best == nullptr || s.last_revision > best->last_revision)) {
        best = &s;
      }
    }
    if (best == nullptr) {
      for (const auto& s : segments) {
        if (s.first_revision > next && (!chain.next_segment_start || s.first_revision < *chain.next_segment_start)) {
          chain.next_segment_start = s.first_revision;
        }
      }
      break;
    }
    chain.segments.push_back(*best);
    chain.reaches = best->last_revision;
    chain.reaches_observed_ms = best->last_observed_ms;
    next = best->last_revision + 1;
  }
  return chain;
}

}  // namespace etcdadm::changelog

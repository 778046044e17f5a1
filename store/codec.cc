#include "store/codec.h"

#include <isa-l/igzip_lib.h>
#include <zstd.h>

#include <cstring>
#include <vector>

#include "common/error.h"

namespace etcdadm {

namespace {

constexpr size_t kOutBuf = 256 * 1024;

class PassThrough : public StreamCodec {
 public:
  explicit PassThrough(ByteSink& out) : out_(out) {}
  void write(const uint8_t* d, size_t n) override { out_.write(d, n); }
  void finish() override {}

 private:
  ByteSink& out_;
};

class GzipEncoder : public StreamCodec {
 public:
  GzipEncoder(int level, ByteSink& out) : out_(out), buf_(kOutBuf) {
    if (level < 0) level = 1;
    if (level > ISAL_DEF_MAX_LEVEL) level = ISAL_DEF_MAX_LEVEL;
    static const size_t kLevelBuf[] = {ISAL_DEF_LVL0_DEFAULT, ISAL_DEF_LVL1_DEFAULT, ISAL_DEF_LVL2_DEFAULT,
                                       ISAL_DEF_LVL3_DEFAULT};
    level_buf_.resize(kLevelBuf[level]);
    isal_deflate_init(&zs_);
    zs_.gzip_flag = IGZIP_GZIP;
    zs_.level = static_cast<uint32_t>(level);
    zs_.level_buf = level_buf_.data();
    zs_.level_buf_size = static_cast<uint32_t>(level_buf_.size());
    zs_.flush = NO_FLUSH;
  }
  void write(const uint8_t* d, size_t n) override { run(d, n, false); }
  void finish() override { run(nullptr, 0, true); }

 private:
  void run(const uint8_t* d, size_t n, bool last) {
    zs_.next_in = const_cast<uint8_t*>(d);
    zs_.avail_in = static_cast<uint32_t>(n);
    zs_.end_of_stream = last ? 1 : 0;
    do {
      zs_.next_out = buf_.data();
      zs_.avail_out = static_cast<uint32_t>(buf_.size());
      int rc = isal_deflate(&zs_);
      if (rc != COMP_OK)
        throw Error(ErrorKind::kInternal, "gzip compression failed (ISA-L error " + std::to_string(rc) + ")");
      size_t produced = buf_.size() - zs_.avail_out;
      if (produced > 0) out_.write(buf_.data(), produced);
    } while (zs_.avail_in > 0 || (last && zs_.internal_state.state != ZSTATE_END));
  }

  ByteSink& out_;
  std::vector<uint8_t> buf_;
  std::vector<uint8_t> level_buf_;
  isal_zstream zs_{};
};

// Decodes one or more concatenated gzip members (pigz and `cat a.gz b.gz` produce several).
// ISA-L checks each member's CRC-32 and length trailer.
class GzipDecoder : public StreamCodec {
 public:
  explicit GzipDecoder(ByteSink& out) : out_(out), buf_(kOutBuf), st_(std::make_unique<inflate_state>()) { reset(); }
  void write(const uint8_t* d, size_t n) override {
    st_->next_in = const_cast<uint8_t*>(d);
    st_->avail_in = static_cast<uint32_t>(n);
    for (;;) {
      if (st_->block_state == ISAL_BLOCK_FINISH) {
        if (st_->avail_in == 0) return;
        // Another member follows the finished one.
        uint8_t* next = st_->next_in;
        uint32_t avail = st_->avail_in;
        reset();
        st_->next_in = next;
        st_->avail_in = avail;
      }
      bool output_full = step();
      if (st_->avail_in == 0 && !output_full && st_->block_state != ISAL_BLOCK_FINISH) return;  // needs more input
    }
  }
  void finish() override {
    st_->next_in = nullptr;
    st_->avail_in = 0;
    while (st_->block_state != ISAL_BLOCK_FINISH && step()) {
    }
    if (st_->block_state != ISAL_BLOCK_FINISH) {
      throw Error(ErrorKind::kCorrupt, "gzip stream is truncated (it ends in the middle of the compressed data)");
    }
  }

 private:
  void reset() {
    isal_inflate_init(st_.get());
    st_->crc_flag = ISAL_GZIP;
  }
  // One inflate call; returns true when the output buffer was filled (more output may be pending).
  bool step() {
    st_->next_out = buf_.data();
    st_->avail_out = static_cast<uint32_t>(buf_.size());
    int rc = isal_inflate(st_.get());
    if (rc == ISAL_INCORRECT_CHECKSUM)
      throw Error(ErrorKind::kCorrupt, "gzip CRC-32 mismatch: the compressed data is damaged");
    if (rc < 0) {
      throw Error(ErrorKind::kCorrupt, std::string("gzip data is damaged (") +
                                           (rc == ISAL_INVALID_WRAPPER ? "not a gzip stream" : "invalid deflate data") +
                                           ")");
    }
    size_t produced = buf_.size() - st_->avail_out;
    if (produced > 0) out_.write(buf_.data(), produced);
    return st_->avail_out == 0;
  }

  ByteSink& out_;
  std::vector<uint8_t> buf_;
  std::unique_ptr<inflate_state> st_;
};

class ZstdEncoder : public StreamCodec {
 public:
  ZstdEncoder(int level, ByteSink& out) : out_(out), buf_(ZSTD_CStreamOutSize()), cs_(ZSTD_createCCtx()) {
    ZSTD_CCtx_setParameter(cs_, ZSTD_c_compressionLevel, level < 0 ? 1 : level);
    ZSTD_CCtx_setParameter(cs_, ZSTD_c_checksumFlag, 1);
  }
  ~ZstdEncoder() override { ZSTD_freeCCtx(cs_); }
  void write(const uint8_t* d, size_t n) override {
    ZSTD_inBuffer in{d, n, 0};
    while (in.pos < in.size) pump(in, ZSTD_e_continue);
  }
  void finish() override {
    ZSTD_inBuffer in{nullptr, 0, 0};
    while (pump(in, ZSTD_e_end) != 0) {
    }
  }

 private:
  size_t pump(ZSTD_inBuffer& in, ZSTD_EndDirective mode) {
    ZSTD_outBuffer o{buf_.data(), buf_.size(), 0};
    size_t rc = ZSTD_compressStream2(cs_, &o, &in, mode);
    if (ZSTD_isError(rc))
      throw Error(ErrorKind::kInternal, std::string("zstd compression failed: ") + ZSTD_getErrorName(rc));
    if (o.pos > 0) out_.write(buf_.data(), o.pos);
    return rc;
  }
  ByteSink& out_;
  std::vector<uint8_t> buf_;
  ZSTD_CCtx* cs_;
};

class ZstdDecoder : public StreamCodec {
 public:
  explicit ZstdDecoder(ByteSink& out) : out_(out), buf_(ZSTD_DStreamOutSize()), ds_(ZSTD_createDCtx()) {}
  ~ZstdDecoder() override { ZSTD_freeDCtx(ds_); }
  void write(const uint8_t* d, size_t n) override {
    ZSTD_inBuffer in{d, n, 0};
    while (in.pos < in.size) {
      ZSTD_outBuffer o{buf_.data(), buf_.size(), 0};
      last_ = ZSTD_decompressStream(ds_, &o, &in);
      if (ZSTD_isError(last_)) {
        throw Error(ErrorKind::kCorrupt, std::string("zstd data is damaged: ") + ZSTD_getErrorName(last_));
      }
      if (o.pos > 0) out_.write(buf_.data(), o.pos);
    }
  }
  void finish() override {
    // Flush output still buffered in the decoder; last_ == 0 means a frame ended and was flushed.
    while (last_ != 0) {
      ZSTD_inBuffer in{nullptr, 0, 0};
      ZSTD_outBuffer o{buf_.data(), buf_.size(), 0};
      size_t rc = ZSTD_decompressStream(ds_, &o, &in);
      if (ZSTD_isError(rc))
        throw Error(ErrorKind::kCorrupt, std::string("zstd data is damaged: ") + ZSTD_getErrorName(rc));
      if (o.pos > 0) out_.write(buf_.data(), o.pos);
      last_ = rc;
      if (o.pos < o.size) break;
    }
    if (last_ != 0) throw Error(ErrorKind::kCorrupt, "zstd stream is truncated (it ends in the middle of a frame)");
  }

 private:
  ByteSink& out_;
  std::vector<uint8_t> buf_;
  ZSTD_DCtx* ds_;
  size_t last_ = 1;  // non-zero until a frame has been completed
};

}  // namespace

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
  }
  return "?";
}

std::optional<Compression> parse_compression(const std::string& name) {
  if (name == "none") return Compression::kNone;
  if (name == "gzip" || name == "gz") return Compression::kGzip;
  if (name == "zstd" || name == "zst") return Compression::kZstd;
  return std::nullopt;
}

const char* compression_extension(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "";
    case Compression::kGzip:
      return ".gz";
    case Compression::kZstd:
      return ".zst";
  }
  return "";
}

Compression detect_compression(const uint8_t* head, size_t size) {
  if (size >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Compression::kGzip;
  if (size >= 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd) return Compression::kZstd;
  return Compression::kNone;
}

std::unique_ptr<StreamCodec> make_encoder(Compression c, int level, ByteSink& out) {
  switch (c) {
    case Compression::kNone:
      return std::make_unique<PassThrough>(out);
    case Compression::kGzip:
      return std::make_unique<GzipEncoder>(level, out);
    case Compression::kZstd:
      return std::make_unique<ZstdEncoder>(level, out);
  }
  throw Error(ErrorKind::kInternal, "unknown compression");
}

std::unique_ptr<StreamCodec> make_decoder(Compression c, ByteSink& out) {
  switch (c) {
    case Compression::kNone:
      return std::make_unique<PassThrough>(out);
    case Compression::kGzip:
      return std::make_unique<GzipDecoder>(out);
    case Compression::kZstd:
      return std::make_unique<ZstdDecoder>(out);
  }
  throw Error(ErrorKind::kInternal, "unknown compression");
}

}  // namespace etcdadm

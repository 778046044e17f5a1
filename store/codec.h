// Compression of stored backups. A backup's data file holds the raw snapshot (trailer included),
// compressed as the store says: gzip (ISA-L, standard single-member gzip readable by gunzip and Go),
// zstd, or nothing. Encoders and decoders are streaming ByteSinks: memory stays flat.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/byte_sink.h"

namespace etcdadm {

// A ByteSink that transforms its input into another sink; finish() flushes the end of the stream
// (and, for decoders, fails with kCorrupt when the stream was incomplete).
class StreamCodec : public ByteSink {
 public:
  virtual void finish() = 0;
};

enum class Compression { kNone, kGzip, kZstd };

const char* compression_name(Compression c);
std::optional<Compression> parse_compression(const std::string& name);
// File name extension including the dot ("" for none).
const char* compression_extension(Compression c);
// Guesses from the first bytes (gzip 1f 8b, zstd 28 b5 2f fd, else none).
Compression detect_compression(const uint8_t* head, size_t size);

// level < 0 picks the default (gzip: ISA-L level 1, which keeps up with the snapshot stream;
// zstd: 1). gzip levels are ISA-L's 0..3; zstd's 1..19.
std::unique_ptr<StreamCodec> make_encoder(Compression c, int level, ByteSink& out);
std::unique_ptr<StreamCodec> make_decoder(Compression c, ByteSink& out);

}  // namespace etcdadm

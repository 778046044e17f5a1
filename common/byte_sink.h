// Byte streams are pushed through chains of ByteSinks: snapshot stream -> digest check -> compress
// -> hash -> store. Each link sees every byte once, in order, in bounded memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/sha256.h"

namespace etcdadm {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(const uint8_t* data, size_t size) = 0;
};

// Forwards everything while computing its SHA-256 and length.
class HashingSink : public ByteSink {
 public:
  explicit HashingSink(ByteSink* next) : next_(next) {}
  void write(const uint8_t* data, size_t size) override {
    hash_.update(data, size);
    bytes_ += size;
    if (next_ != nullptr) next_->write(data, size);
  }
  uint64_t bytes() const { return bytes_; }
  Sha256Digest finish() { return hash_.finish(); }

 private:
  ByteSink* next_;
  Sha256 hash_;
  uint64_t bytes_ = 0;
};

// Collects everything in memory: for small things only (a change log segment, a test's file).
class StringSink : public ByteSink {
 public:
  void write(const uint8_t* data, size_t size) override { out.append(reinterpret_cast<const char*>(data), size); }
  std::string out;
};

}  // namespace etcdadm

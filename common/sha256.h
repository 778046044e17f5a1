// Streaming SHA-256 (OpenSSL EVP, which uses the CPU's SHA extensions when present), HMAC-SHA-256,
// HKDF-SHA-256, and bytes as lower-case hex.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace etcdadm {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  Sha256Digest finish();  // may be called once

 private:
  evp_md_ctx_st* ctx_;
};

std::string to_hex(const uint8_t* data, size_t size);
// `bytes` bytes from OpenSSL's random generator, as lower-case hex (tokens and IDs that must not repeat).
std::string random_hex(size_t bytes);
inline std::string to_hex(const Sha256Digest& d) { return to_hex(d.data(), d.size()); }
Sha256Digest sha256_of(const void* data, size_t size);
// HMAC-SHA-256 of `data` under `key`: the 32 raw bytes (SigV4 signing keys, Azure Shared Key, age's
// header MAC, the controllers' record authenticators).
std::string hmac_sha256(std::string_view key, std::string_view data);
// HKDF-SHA-256 (RFC 5869): 32 bytes from `ikm` with `salt` ("" is HKDF's default, a zero-filled
// block) and `info`.
std::string hkdf_sha256(std::string_view ikm, std::string_view salt, std::string_view info);

}  // namespace etcdadm

#include "common/sha256.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/error.h"

namespace etcdadm {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    throw Error(ErrorKind::kInternal, "cannot initialise SHA-256");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const void* data, size_t size) {
  if (size > 0 && EVP_DigestUpdate(ctx_, data, size) != 1) throw Error(ErrorKind::kInternal, "SHA-256 update failed");
}

Sha256Digest Sha256::finish() {
  Sha256Digest d{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_, d.data(), &len) != 1 || len != d.size()) {
    throw Error(ErrorKind::kInternal, "SHA-256 final failed");
  }
  return d;
}

std::string to_hex(const uint8_t* data, size_t size) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  s.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    s.push_back(hex[data[i] >> 4]);
    s.push_back(hex[data[i] & 0xf]);
  }
  return s;
}

Sha256Digest sha256_of(const void* data, size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.finish();
}

std::string hmac_sha256(const std::string& key, const std::string& data) {
  unsigned char out[32];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
           data.size(), out, &len) == nullptr) {
    throw Error(ErrorKind::kInternal, "HMAC-SHA-256 failed");
  }
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1)
    throw Error(ErrorKind::kInternal, "RAND_bytes failed");
  return to_hex(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
}

}  // namespace etcdadm

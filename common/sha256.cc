#include "common/sha256.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include <memory>

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

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char out[32];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
           data.size(), out, &len) == nullptr) {
    throw Error(ErrorKind::kInternal, "HMAC-SHA-256 failed");
  }
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string hkdf_sha256(std::string_view ikm, std::string_view salt, std::string_view info) {
  std::unique_ptr<EVP_KDF, decltype(&EVP_KDF_free)> kdf(EVP_KDF_fetch(nullptr, "HKDF", nullptr), EVP_KDF_free);
  std::unique_ptr<EVP_KDF_CTX, decltype(&EVP_KDF_CTX_free)> ctx(kdf ? EVP_KDF_CTX_new(kdf.get()) : nullptr,
                                                                EVP_KDF_CTX_free);
  char digest[] = "SHA256";
  OSSL_PARAM params[5];
  size_t n = 0;
  params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0);
  params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<char*>(ikm.data()), ikm.size());
  // OpenSSL wants an empty salt left out (HKDF then uses its zero-filled default).
  if (!salt.empty()) {
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<char*>(salt.data()), salt.size());
  }
  params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<char*>(info.data()), info.size());
  params[n] = OSSL_PARAM_construct_end();
  std::string out(32, '\0');
  if (!ctx || EVP_KDF_derive(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), out.size(), params) != 1) {
    throw Error(ErrorKind::kInternal, "HKDF-SHA-256 failed");
  }
  return out;
}

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1)
    throw Error(ErrorKind::kInternal, "RAND_bytes failed");
  return to_hex(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
}

}  // namespace etcdadm

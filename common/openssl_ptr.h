// Owning pointers for the OpenSSL objects etcdadm handles (certificates, keys, BIOs, TLS contexts
// and sessions), and PEM parsing that answers "not PEM" with nullptr rather than an exception, so
// each caller words its own message (a flag's name, a file's role).
#pragma once

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string_view>
#include <vector>

namespace etcdadm {

struct OpenSslFree {
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
  void operator()(SSL* p) const { SSL_free(p); }
};
using X509Ptr = std::unique_ptr<X509, OpenSslFree>;
using KeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree>;
using BioPtr = std::unique_ptr<BIO, OpenSslFree>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpenSslFree>;
using SslPtr = std::unique_ptr<SSL, OpenSslFree>;

// The first certificate of a PEM text, or nullptr (OpenSSL's error queue left empty).
inline X509Ptr parse_pem_cert(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr x(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  ERR_clear_error();
  return x;
}

// Every certificate of a PEM text, in order (a leaf file of a CA rotation holds two); the error
// queue left empty.
inline std::vector<X509Ptr> parse_pem_certs(std::string_view pem) {
  std::vector<X509Ptr> out;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  while (bio) {
    X509Ptr x(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!x) break;
    out.push_back(std::move(x));
  }
  ERR_clear_error();  // the end of the text reads as an error
  return out;
}

// The first (unencrypted) private key of a PEM text, or nullptr (the error queue left empty).
inline KeyPtr parse_pem_key(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  KeyPtr k(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  ERR_clear_error();
  return k;
}

}  // namespace etcdadm

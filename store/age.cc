// age-encryption.org/v1: see age.h. Every cryptographic primitive is OpenSSL's; this file only
// lays out bytes as the specification (c2sp.org/age) and the reference implementation do.
#include "store/age.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>

#include "common/base64.h"
#include "common/error.h"
#include "common/sha256.h"

namespace etcdadm::age {
namespace {

constexpr std::string_view kVersionLine = "age-encryption.org/v1\n";
constexpr std::string_view kX25519Label = "age-encryption.org/v1/X25519";
constexpr std::string_view kScryptLabel = "age-encryption.org/v1/scrypt";
constexpr size_t kFileKeySize = 16;
constexpr size_t kNonceSize = 16;
constexpr size_t kChunkSize = 64 * 1024;
constexpr size_t kTagSize = 16;
constexpr size_t kBodyColumns = 64;
// Limits of our own (age sets none): far above any real header (post-quantum stanza lines are
// ~1.5 KB), far below what would hurt.
constexpr size_t kMaxHeaderBytes = 1 << 20;
constexpr size_t kMaxLineBytes = 64 * 1024;

[[noreturn]] void header_failure(const std::string& why) {
  throw Error(ErrorKind::kCorrupt, "not a valid age file: " + why);
}

[[noreturn]] void openssl_failure(const char* what) {
  throw Error(ErrorKind::kInternal, std::string("OpenSSL: ") + what + " failed");
}

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) openssl_failure("RAND_bytes");
  return out;
}

// ---- primitives ---------------------------------------------------------------------------------

// ChaCha20-Poly1305 with a 32-byte key and 12-byte nonce, no associated data; the tag follows the
// ciphertext.
class Aead {
 public:
  Aead() : ctx_(EVP_CIPHER_CTX_new()) {
    if (!ctx_) openssl_failure("EVP_CIPHER_CTX_new");
  }
  ~Aead() { EVP_CIPHER_CTX_free(ctx_); }
  Aead(const Aead&) = delete;
  Aead& operator=(const Aead&) = delete;

  void seal(std::string_view key, const uint8_t* nonce, const uint8_t* in, size_t size, std::string& out) {
    int len = 0;
    size_t start = out.size();
    out.resize(start + size + kTagSize);
    auto* o = reinterpret_cast<unsigned char*>(out.data() + start);
    if (EVP_EncryptInit_ex(ctx_, EVP_chacha20_poly1305(), nullptr, reinterpret_cast<const unsigned char*>(key.data()),
                           nonce) != 1 ||
        (size > 0 && EVP_EncryptUpdate(ctx_, o, &len, in, static_cast<int>(size)) != 1) ||
        EVP_EncryptFinal_ex(ctx_, o + len, &len) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_GET_TAG, kTagSize, o + size) != 1) {
      openssl_failure("ChaCha20-Poly1305 seal");
    }
  }

  // False when the tag does not authenticate `in` (size includes the tag).
  bool open(std::string_view key, const uint8_t* nonce, const uint8_t* in, size_t size, std::string& out) {
    if (size < kTagSize) return false;
    size_t plain = size - kTagSize;
    out.resize(plain);
    int len = 0;
    auto* o = reinterpret_cast<unsigned char*>(out.data());
    if (EVP_DecryptInit_ex(ctx_, EVP_chacha20_poly1305(), nullptr, reinterpret_cast<const unsigned char*>(key.data()),
                           nonce) != 1 ||
        (plain > 0 && EVP_DecryptUpdate(ctx_, o, &len, in, static_cast<int>(plain)) != 1) ||
        EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_TAG, kTagSize, const_cast<uint8_t*>(in + plain)) != 1) {
      openssl_failure("ChaCha20-Poly1305 open");
    }
    return EVP_DecryptFinal_ex(ctx_, o + len, &len) == 1;
  }

 private:
  EVP_CIPHER_CTX* ctx_;
};

const uint8_t kZeroNonce[12] = {};

std::string wrap_key(std::string_view key, std::string_view file_key) {
  Aead aead;
  std::string out;
  aead.seal(key, kZeroNonce, reinterpret_cast<const uint8_t*>(file_key.data()), file_key.size(), out);
  return out;
}

std::optional<std::string> unwrap_key(std::string_view key, std::string_view body) {
  Aead aead;
  std::string out;
  if (!aead.open(key, kZeroNonce, reinterpret_cast<const uint8_t*>(body.data()), body.size(), out)) return std::nullopt;
  return out;
}

using Pkey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

Pkey x25519_private(std::string_view secret) {
  Pkey k(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, reinterpret_cast<const unsigned char*>(secret.data()),
                                      secret.size()),
         EVP_PKEY_free);
  if (!k) openssl_failure("X25519 private key");
  return k;
}

Key32 x25519_public_of(std::string_view secret) {
  Pkey k = x25519_private(secret);
  Key32 pub{};
  size_t len = pub.size();
  if (EVP_PKEY_get_raw_public_key(k.get(), pub.data(), &len) != 1 || len != 32) openssl_failure("X25519 public key");
  return pub;
}

// X25519(secret, point); nullopt when the result is all zeros (a low-order point), which age
// refuses (OpenSSL refuses to derive it too).
std::optional<std::string> x25519(std::string_view secret, std::string_view point) {
  Pkey priv = x25519_private(secret);
  Pkey peer(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, reinterpret_cast<const unsigned char*>(point.data()),
                                        point.size()),
            EVP_PKEY_free);
  if (!peer) openssl_failure("X25519 public key");
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new(priv.get(), nullptr),
                                                                  EVP_PKEY_CTX_free);
  std::string out(32, '\0');
  size_t len = out.size();
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 || EVP_PKEY_derive_set_peer(ctx.get(), peer.get()) != 1) {
    openssl_failure("X25519 derive");
  }
  if (EVP_PKEY_derive(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &len) != 1 || len != 32)
    return std::nullopt;
  static const char zeros[32] = {};
  if (CRYPTO_memcmp(out.data(), zeros, 32) == 0) return std::nullopt;
  return out;
}

std::string scrypt(std::string_view passphrase, std::string_view salt, int log_n) {
  std::unique_ptr<EVP_KDF, decltype(&EVP_KDF_free)> kdf(EVP_KDF_fetch(nullptr, "SCRYPT", nullptr), EVP_KDF_free);
  if (!kdf) openssl_failure("scrypt fetch");
  std::unique_ptr<EVP_KDF_CTX, decltype(&EVP_KDF_CTX_free)> ctx(EVP_KDF_CTX_new(kdf.get()), EVP_KDF_CTX_free);
  uint64_t n = uint64_t{1} << log_n;
  uint32_t r = 8, p = 1;
  // OpenSSL caps scrypt at 1025 MiB unless told more: age's decryptor allows log N 22 (4 GiB).
  uint64_t maxmem = 128ULL * r * (n + 2) + 128ULL * r * p + (1 << 20);
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, const_cast<char*>(passphrase.data()),
                                        passphrase.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<char*>(salt.data()), salt.size()),
      OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &n),
      OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_R, &r),
      OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_P, &p),
      OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_MAXMEM, &maxmem),
      OSSL_PARAM_construct_end()};
  std::string out(32, '\0');
  if (!ctx || EVP_KDF_derive(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), out.size(), params) != 1) {
    throw Error(ErrorKind::kIo, "scrypt with work factor " + std::to_string(log_n) + " failed (not enough memory?)");
  }
  return out;
}

// ---- Bech32 -------------------------------------------------------------------------------------

constexpr std::string_view kCharset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

uint32_t polymod(const std::vector<uint8_t>& values) {
  static const uint32_t gen[5] = {0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3};
  uint32_t chk = 1;
  for (uint8_t v : values) {
    uint32_t top = chk >> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (int i = 0; i < 5; ++i) {
      if ((top >> i) & 1) chk ^= gen[i];
    }
  }
  return chk;
}

std::vector<uint8_t> hrp_expand(std::string_view hrp) {
  std::vector<uint8_t> out;
  for (char c : hrp) out.push_back(static_cast<uint8_t>(c) >> 5);
  out.push_back(0);
  for (char c : hrp) out.push_back(static_cast<uint8_t>(c) & 31);
  return out;
}

// ---- header -------------------------------------------------------------------------------------

struct Stanza {
  std::vector<std::string> args;  // args[0] is the type
  std::string body;
};

std::string format_stanza(const Stanza& s) {
  std::string out = "->";
  for (const std::string& a : s.args) out += " " + a;
  out += "\n";
  std::string b64 = base64_unpadded(s.body);
  for (size_t i = 0; i < b64.size(); i += kBodyColumns) out += b64.substr(i, kBodyColumns) + "\n";
  // The body ends with a line shorter than 64 columns: an empty one when it filled the last line.
  if (b64.size() % kBodyColumns == 0) out += "\n";
  return out;
}

bool is_argument(std::string_view a) {
  return !a.empty() && std::all_of(a.begin(), a.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

std::string decode_b64_or_fail(std::string_view text, const char* what) {
  auto bytes = base64_unpadded_decode(text);
  if (!bytes) header_failure(std::string(what) + " is not canonical unpadded base64");
  return *bytes;
}

struct ParsedHeader {
  std::vector<Stanza> stanzas;
  size_t mac_input_end = 0;  // the header bytes the MAC covers: up to and including "---"
  std::string mac;
  size_t size = 0;  // the whole header, including the MAC line
};

// Parses a complete header at the start of `data`; nullopt when more bytes are needed. The 1 MiB
// limit is enforced here, for every caller: past it no header can end, so more bytes are never
// asked for (a caller appending chunks and parsing again would otherwise do so without end).
std::optional<ParsedHeader> parse_header(std::string_view data) {
  auto line_at = [&](size_t pos) -> std::optional<std::string_view> {
    if (pos > kMaxHeaderBytes) header_failure("the header is larger than 1 MiB");
    size_t nl = data.find('\n', pos);
    if (nl == std::string_view::npos) {
      if (data.size() - pos > kMaxLineBytes) header_failure("a header line longer than 64 KiB");
      if (data.size() > kMaxHeaderBytes) header_failure("the header is larger than 1 MiB");
      return std::nullopt;
    }
    if (nl - pos > kMaxLineBytes) header_failure("a header line longer than 64 KiB");
    return data.substr(pos, nl - pos);
  };
  if (data.size() < kVersionLine.size()) {
    if (kVersionLine.substr(0, data.size()) != data) header_failure("it does not start with age-encryption.org/v1");
    return std::nullopt;
  }
  if (data.substr(0, kVersionLine.size()) != kVersionLine)
    header_failure("it does not start with age-encryption.org/v1");
  ParsedHeader h;
  size_t pos = kVersionLine.size();
  for (;;) {
    auto line = line_at(pos);
    if (!line) return std::nullopt;
    if (line->substr(0, 3) == "---") {
      if (line->size() < 4 || (*line)[3] != ' ') header_failure("the MAC line is not \"--- <MAC>\"");
      std::string_view mac_b64 = line->substr(4);
      if (mac_b64.find(' ') != std::string_view::npos) header_failure("the MAC line has extra fields");
      h.mac = decode_b64_or_fail(mac_b64, "the header MAC");
      if (h.mac.size() != 32) header_failure("the header MAC is not 32 bytes");
      h.mac_input_end = pos + 3;
      h.size = pos + line->size() + 1;
      if (h.stanzas.empty()) header_failure("no recipient stanza");
      return h;
    }
    // "-> " type args: split on single spaces; element 0 must be "->".
    Stanza s;
    std::vector<std::string_view> parts;
    size_t start = 0;
    while (true) {
      size_t sp = line->find(' ', start);
      parts.push_back(line->substr(start, sp == std::string_view::npos ? std::string_view::npos : sp - start));
      if (sp == std::string_view::npos) break;
      start = sp + 1;
    }
    if (parts.size() < 2 || parts[0] != "->") header_failure("a stanza line does not start with \"-> <type>\"");
    for (size_t i = 1; i < parts.size(); ++i) {
      if (!is_argument(parts[i])) header_failure("a stanza argument is empty or has characters outside 0x21-0x7e");
      s.args.emplace_back(parts[i]);
    }
    pos += line->size() + 1;
    for (;;) {
      auto body = line_at(pos);
      if (!body) return std::nullopt;
      if (body->size() > kBodyColumns) header_failure("a stanza body line is longer than 64 columns");
      s.body += decode_b64_or_fail(*body, "a stanza body");
      pos += body->size() + 1;
      if (body->size() < kBodyColumns) break;
    }
    h.stanzas.push_back(std::move(s));
    if (pos > kMaxHeaderBytes) header_failure("the header is larger than 1 MiB");
  }
}

std::string header_mac(std::string_view file_key, std::string_view mac_input) {
  return hmac_sha256(hkdf_sha256(file_key, "", "header"), mac_input);
}

// ---- stanzas ------------------------------------------------------------------------------------

Stanza x25519_stanza(const X25519Recipient& r, std::string_view file_key) {
  std::string eph = random_bytes(32);
  Key32 share = x25519_public_of(eph);
  std::string share_s(share.begin(), share.end());
  std::string pk(r.public_key.begin(), r.public_key.end());
  auto shared = x25519(eph, pk);
  if (!shared)
    throw Error(ErrorKind::kInvalidArgument, "recipient " + r.str() + " is a low-order point: not a usable key");
  std::string key = hkdf_sha256(*shared, share_s + pk, kX25519Label);
  return Stanza{{"X25519", base64_unpadded(share_s)}, wrap_key(key, file_key)};
}

Stanza scrypt_stanza(const std::string& passphrase, int log_n, std::string_view file_key) {
  std::string salt = random_bytes(16);
  std::string key = scrypt(passphrase, std::string(kScryptLabel) + salt, log_n);
  return Stanza{{"scrypt", base64_unpadded(salt), std::to_string(log_n)}, wrap_key(key, file_key)};
}

// The file key from the first stanza an identity opens; throws kCorrupt for a stanza of a known
// type that is malformed (age's "header failure"), kAuth when none opens.
std::string unwrap_file_key(const std::vector<Stanza>& stanzas, const Identities& ids) {
  bool has_scrypt = std::any_of(stanzas.begin(), stanzas.end(), [](const Stanza& s) { return s.args[0] == "scrypt"; });
  if (has_scrypt && stanzas.size() != 1) header_failure("an scrypt stanza that is not the only one");
  for (const X25519Identity& id : ids.x25519) {
    std::string sk(id.secret.begin(), id.secret.end());
    Key32 pub = x25519_public_of(sk);
    std::string pk(pub.begin(), pub.end());
    for (const Stanza& s : stanzas) {
      if (s.args[0] != "X25519") continue;
      if (s.args.size() != 2) header_failure("an X25519 stanza without exactly one argument");
      std::string share = decode_b64_or_fail(s.args[1], "an X25519 share");
      if (share.size() != 32) header_failure("an X25519 share that is not 32 bytes");
      if (s.body.size() != 32) header_failure("an X25519 stanza body that is not 32 bytes");
      auto shared = x25519(sk, share);
      if (!shared) header_failure("an X25519 share that is a low-order point");
      if (auto key = unwrap_key(hkdf_sha256(*shared, share + pk, kX25519Label), s.body)) return *key;
    }
  }
  if (ids.passphrase) {
    for (const Stanza& s : stanzas) {
      if (s.args[0] != "scrypt") continue;
      if (s.args.size() != 3) header_failure("an scrypt stanza without exactly two arguments");
      std::string salt = decode_b64_or_fail(s.args[1], "an scrypt salt");
      if (salt.size() != 16) header_failure("an scrypt salt that is not 16 bytes");
      const std::string& wf = s.args[2];
      if (wf.empty() || wf.size() > 2 || wf[0] < '1' || wf[0] > '9' ||
          !std::all_of(wf.begin(), wf.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        header_failure("an scrypt work factor that is not a decimal number");
      }
      int log_n = std::stoi(wf);
      if (log_n > ids.max_scrypt_work_factor) {
        header_failure("an scrypt work factor of " + wf + ", above the limit of " +
                       std::to_string(ids.max_scrypt_work_factor));
      }
      if (s.body.size() != 32) header_failure("an scrypt stanza body that is not 32 bytes");
      std::string key = scrypt(*ids.passphrase, std::string(kScryptLabel) + salt, log_n);
      if (auto file_key = unwrap_key(key, s.body)) return *file_key;
    }
  }
  throw Error(ErrorKind::kAuth, "no identity or passphrase given opens this age file",
              "pass the identity file (or passphrase) of one of the recipients it was encrypted to");
}

// ---- STREAM -------------------------------------------------------------------------------------

void chunk_nonce(uint64_t counter, bool last, uint8_t nonce[12]) {
  std::memset(nonce, 0, 12);
  for (int i = 0; i < 8; ++i) nonce[10 - i] = static_cast<uint8_t>((counter >> (8 * i)) & 0xff);
  nonce[11] = last ? 1 : 0;
}

// The header (up to and including the MAC line) that gives `to` the file key.
std::string make_header(std::string_view file_key, const Recipients& to) {
  if (to.passphrase && !to.x25519.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "age encrypts to recipients or to a passphrase, not both");
  }
  if (!to.passphrase && to.x25519.empty()) throw Error(ErrorKind::kInvalidArgument, "no age recipient");
  if (to.passphrase && to.passphrase->empty()) throw Error(ErrorKind::kInvalidArgument, "an empty passphrase");
  std::string header(kVersionLine);
  if (to.passphrase) {
    header += format_stanza(scrypt_stanza(*to.passphrase, to.scrypt_work_factor, file_key));
  } else {
    for (const X25519Recipient& r : to.x25519) header += format_stanza(x25519_stanza(r, file_key));
  }
  header += "---";
  header += " " + base64_unpadded(header_mac(file_key, header)) + "\n";
  return header;
}

// The file key of a parsed header, its MAC checked.
std::string open_header(std::string_view data, const ParsedHeader& h, const Identities& ids) {
  std::string file_key = unwrap_file_key(h.stanzas, ids);
  std::string mac = header_mac(file_key, data.substr(0, h.mac_input_end));
  if (CRYPTO_memcmp(mac.data(), h.mac.data(), 32) != 0) {
    throw Error(ErrorKind::kAuth,
                "age file: the header MAC does not match (tampered header, or not the key it was made with)");
  }
  return file_key;
}

class Encryptor : public StreamCodec {
 public:
  Encryptor(const Recipients& to, ByteSink& out) : out_(out) {
    std::string file_key = random_bytes(kFileKeySize);
    std::string header = make_header(file_key, to);
    std::string nonce = random_bytes(kNonceSize);
    header += nonce;
    emit(header);
    key_ = hkdf_sha256(file_key, nonce, "payload");
    buf_.reserve(kChunkSize);
  }

  void write(const uint8_t* data, size_t size) override {
    while (size > 0) {
      // A full chunk goes out only once more data follows: the last chunk carries the flag.
      if (buf_.size() == kChunkSize) seal(false);
      size_t n = std::min(size, kChunkSize - buf_.size());
      buf_.append(reinterpret_cast<const char*>(data), n);
      data += n;
      size -= n;
    }
  }

  void finish() override {
    if (finished_) return;
    seal(true);
    finished_ = true;
  }

 private:
  void seal(bool last) {
    uint8_t nonce[12];
    chunk_nonce(counter_++, last, nonce);
    sealed_.clear();
    aead_.seal(key_, nonce, reinterpret_cast<const uint8_t*>(buf_.data()), buf_.size(), sealed_);
    emit(sealed_);
    buf_.clear();
  }
  void emit(const std::string& s) { out_.write(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

  ByteSink& out_;
  std::string key_;
  std::string buf_, sealed_;
  Aead aead_;
  uint64_t counter_ = 0;
  bool finished_ = false;
};

class Decryptor : public StreamCodec {
 public:
  Decryptor(const Identities& with, ByteSink& out) : ids_(with), out_(out) {}

  void write(const uint8_t* data, size_t size) override {
    if (done_ && size > 0) throw Error(ErrorKind::kCorrupt, "age file: data after the final chunk");
    buf_.append(reinterpret_cast<const char*>(data), size);
    if (key_.empty()) {
      if (!start()) return;
    }
    // A chunk is opened as non-final only when bytes after it show it is not the last.
    while (buf_.size() - pos_ > kChunkSize + kTagSize) open_chunk(kChunkSize + kTagSize, false);
    if (pos_ > kChunkSize) {  // keep the buffer from growing: drop what was consumed
      buf_.erase(0, pos_);
      pos_ = 0;
    }
  }

  void finish() override {
    if (key_.empty()) {
      if (!start()) header_failure("the file ends inside the header or the payload nonce");
    }
    size_t rest = buf_.size() - pos_;
    if (rest == 0) throw Error(ErrorKind::kCorrupt, "age file: truncated, no final chunk");
    if (rest == kTagSize && counter_ > 0) throw Error(ErrorKind::kCorrupt, "age file: an empty final chunk");
    open_chunk(rest, true);
  }

 private:
  // Parses the header and the nonce once they are all here; false while more bytes are needed.
  bool start() {
    auto h = parse_header(buf_);  // throws past 1 MiB without a whole header
    if (!h) return false;
    if (buf_.size() < h->size + kNonceSize) return false;
    std::string file_key = open_header(buf_, *h, ids_);
    key_ = hkdf_sha256(file_key, std::string_view(buf_).substr(h->size, kNonceSize), "payload");
    pos_ = h->size + kNonceSize;
    return true;
  }

  void open_chunk(size_t size, bool last) {
    if (done_) throw Error(ErrorKind::kCorrupt, "age file: data after the final chunk");
    uint8_t nonce[12];
    chunk_nonce(counter_, last, nonce);
    const auto* in = reinterpret_cast<const uint8_t*>(buf_.data() + pos_);
    if (!aead_.open(key_, nonce, in, size, plain_)) {
      throw Error(ErrorKind::kCorrupt,
                  "age file: chunk " + std::to_string(counter_) + " does not authenticate (damaged or truncated)");
    }
    ++counter_;
    pos_ += size;
    done_ = last;
    out_.write(reinterpret_cast<const uint8_t*>(plain_.data()), plain_.size());
  }

  Identities ids_;
  ByteSink& out_;
  std::string buf_, plain_, key_;
  size_t pos_ = 0;
  Aead aead_;
  uint64_t counter_ = 0;
  bool done_ = false;
};

template <typename T, typename Parse>
std::vector<T> parse_key_lines(std::string_view text, const std::string& name, const char* what, Parse parse) {
  std::vector<T> out;
  size_t line_no = 0, start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    try {
      out.push_back(parse(line));
    } catch (const Error&) {
      // The line itself is not repeated: it may be a secret.
      throw Error(ErrorKind::kInvalidArgument, name + ": line " + std::to_string(line_no) + " is not " + what);
    }
  }
  if (out.empty()) throw Error(ErrorKind::kInvalidArgument, name + ": no " + std::string(what) + " in it");
  return out;
}

}  // namespace

std::string bech32_encode(const std::string& hrp, const uint8_t* data, size_t size) {
  std::string lower = hrp;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<uint8_t> values;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < size; ++i) {
    acc = (acc << 8) | data[i];
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      values.push_back((acc >> bits) & 31);
    }
  }
  if (bits > 0) values.push_back((acc << (5 - bits)) & 31);
  std::vector<uint8_t> check = hrp_expand(lower);
  check.insert(check.end(), values.begin(), values.end());
  check.insert(check.end(), 6, 0);
  uint32_t mod = polymod(check) ^ 1;
  std::string out = lower + "1";
  for (uint8_t v : values) out += kCharset[v];
  for (int i = 0; i < 6; ++i) out += kCharset[(mod >> (5 * (5 - i))) & 31];
  return out;
}

std::optional<std::pair<std::string, std::vector<uint8_t>>> bech32_decode(std::string_view text) {
  bool lower = false, upper = false;
  for (char c : text) {
    if (c < 33 || c > 126) return std::nullopt;
    lower |= (c >= 'a' && c <= 'z');
    upper |= (c >= 'A' && c <= 'Z');
  }
  if (lower && upper) return std::nullopt;
  size_t sep = text.rfind('1');
  if (sep == std::string_view::npos || sep == 0 || sep + 7 > text.size()) return std::nullopt;
  std::string hrp(text.substr(0, sep));
  std::string hrp_lower = hrp;
  for (char& c : hrp_lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<uint8_t> values;
  for (char c : text.substr(sep + 1)) {
    auto p = kCharset.find(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (p == std::string_view::npos) return std::nullopt;
    values.push_back(static_cast<uint8_t>(p));
  }
  std::vector<uint8_t> check = hrp_expand(hrp_lower);
  check.insert(check.end(), values.begin(), values.end());
  if (polymod(check) != 1) return std::nullopt;
  values.resize(values.size() - 6);
  std::vector<uint8_t> bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t v : values) {
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<uint8_t>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 5 || (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return std::make_pair(hrp, bytes);
}

std::string X25519Recipient::str() const { return bech32_encode("age", public_key.data(), public_key.size()); }

X25519Recipient X25519Identity::recipient() const {
  return X25519Recipient{
      x25519_public_of(std::string_view(reinterpret_cast<const char*>(secret.data()), secret.size()))};
}

std::string X25519Identity::str() const {
  std::string s = bech32_encode("AGE-SECRET-KEY-", secret.data(), secret.size());
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

X25519Recipient parse_recipient(std::string_view text) {
  auto d = bech32_decode(text);
  if (!d || d->first != "age" || d->second.size() != 32) {
    throw Error(ErrorKind::kInvalidArgument, "'" + std::string(text) + "' is not an age X25519 recipient (age1...)");
  }
  X25519Recipient r;
  std::copy(d->second.begin(), d->second.end(), r.public_key.begin());
  return r;
}

X25519Identity parse_identity(std::string_view text) {
  auto d = bech32_decode(text);
  if (!d || d->first != "AGE-SECRET-KEY-" || d->second.size() != 32) {
    throw Error(ErrorKind::kInvalidArgument, "not an age X25519 identity (AGE-SECRET-KEY-1...)");
  }
  X25519Identity id;
  std::copy(d->second.begin(), d->second.end(), id.secret.begin());
  return id;
}

X25519Identity generate_identity() {
  X25519Identity id;
  std::string s = random_bytes(32);
  std::copy(s.begin(), s.end(), id.secret.begin());
  return id;
}

std::vector<X25519Identity> parse_identity_file(std::string_view text, const std::string& name) {
  return parse_key_lines<X25519Identity>(text, name, "an age identity (AGE-SECRET-KEY-1...)", parse_identity);
}

std::vector<X25519Recipient> parse_recipients_file(std::string_view text, const std::string& name) {
  return parse_key_lines<X25519Recipient>(text, name, "an age recipient (age1...)", parse_recipient);
}

std::unique_ptr<StreamCodec> make_encryptor(const Recipients& to, ByteSink& out) {
  return std::make_unique<Encryptor>(to, out);
}

std::unique_ptr<StreamCodec> make_decryptor(const Identities& with, ByteSink& out) {
  return std::make_unique<Decryptor>(with, out);
}

std::string encrypt(const Recipients& to, std::string_view plain) {
  StringSink sink;
  auto e = make_encryptor(to, sink);
  e->write(reinterpret_cast<const uint8_t*>(plain.data()), plain.size());
  e->finish();
  return sink.out;
}

std::string decrypt(const Identities& with, std::string_view file) {
  StringSink sink;
  auto d = make_decryptor(with, sink);
  d->write(reinterpret_cast<const uint8_t*>(file.data()), file.size());
  d->finish();
  return sink.out;
}

bool looks_like_age(std::string_view head) {
  size_t n = std::min(head.size(), kVersionLine.size());
  return n > 0 && head.substr(0, n) == kVersionLine.substr(0, n);
}

std::optional<size_t> header_size(std::string_view head) {
  auto h = parse_header(head);
  if (!h) return std::nullopt;
  return h->size;
}

RewrappedHeader rewrap_header(std::string_view head, const Identities& with, const Recipients& to) {
  auto h = parse_header(head);
  if (!h) header_failure("the file ends inside the header");
  std::string file_key = open_header(head, *h, with);
  return RewrappedHeader{h->size, make_header(file_key, to)};
}

}  // namespace etcdadm::age

// The age file encryption format, age-encryption.org/v1 (c2sp.org/age), written and read natively
// on OpenSSL (X25519, HKDF-SHA-256, ChaCha20-Poly1305, scrypt, HMAC-SHA-256): files the standard
// `age` tool decrypts and produces. Recipients: X25519 (`age1...`) and scrypt passphrases.
//
//   header  = "age-encryption.org/v1\n" stanza... "--- " base64(HMAC) "\n"
//   stanza  = "-> " type args "\n" base64(body) wrapped at 64 columns, ending with a short line
//   payload = nonce(16) || STREAM(ChaCha20-Poly1305, 64 KiB chunks, counter || last-chunk flag)
//
// Both directions are streaming StreamCodecs (store/codec.h): memory is one chunk, whatever the
// file size. Decryption fails with Error(kCorrupt) for a malformed header or payload (a damaged
// file), Error(kAuth) when no identity or passphrase opens it or the header MAC does not match
// the key found (a wrong key). Verified against the C2SP CCTV age test kit and Debian's age 1.1.1.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/codec.h"

namespace etcdadm::age {

using Key32 = std::array<uint8_t, 32>;

struct X25519Recipient {
  Key32 public_key{};
  std::string str() const;  // "age1..." (Bech32, lower case)
  bool operator==(const X25519Recipient&) const = default;
};

struct X25519Identity {
  Key32 secret{};
  X25519Recipient recipient() const;
  std::string str() const;  // "AGE-SECRET-KEY-1..." (Bech32, upper case)
};

// Throw kInvalidArgument naming what is wrong (never the secret itself).
X25519Recipient parse_recipient(std::string_view text);
X25519Identity parse_identity(std::string_view text);
X25519Identity generate_identity();

// An identity file as age-keygen writes it and `age -d -i` reads it: one identity per line; empty
// lines and lines starting with '#' are skipped; CRLF accepted; at least one identity.
std::vector<X25519Identity> parse_identity_file(std::string_view text, const std::string& name_for_errors);
// A recipients file as `age -R` reads it (the same line rules).
std::vector<X25519Recipient> parse_recipients_file(std::string_view text, const std::string& name_for_errors);

// Who can open a file: recipients (any number) or one passphrase (age allows an scrypt stanza only
// alone in a header).
struct Recipients {
  std::vector<X25519Recipient> x25519;
  std::optional<std::string> passphrase;
  int scrypt_work_factor = 18;  // log2 N, as `age -p` (about 1 s)
};

// What may open a file: identities tried in order, then the passphrase.
struct Identities {
  std::vector<X25519Identity> x25519;
  std::optional<std::string> passphrase;
  int max_scrypt_work_factor = 22;  // as age's decryptor: refused above, before any work
};

// Encrypts everything written into an age file written to `out`; finish() writes the last chunk.
std::unique_ptr<StreamCodec> make_encryptor(const Recipients& to, ByteSink& out);
// Decrypts an age file written into it, passing the plaintext to `out` chunk by chunk as each is
// authenticated; finish() fails unless the final chunk was seen and nothing followed it.
std::unique_ptr<StreamCodec> make_decryptor(const Identities& with, ByteSink& out);

// The same for a whole file held in memory (a marker's passphrase check, tests).
std::string encrypt(const Recipients& to, std::string_view plain);
std::string decrypt(const Identities& with, std::string_view file);

// True when `head` (the first bytes of a file, any number) starts like an age file.
bool looks_like_age(std::string_view head);
// The size of the header (through the MAC line) at the start of `head`; nullopt while `head` ends
// inside it. Throws kCorrupt for a malformed header.
std::optional<size_t> header_size(std::string_view head);

// Rekeying: the file key of an age file is wrapped for new recipients, the payload (nonce and
// chunks, everything after the header) stays byte for byte valid. `head` holds at least the whole
// header; `with` must open it (kAuth otherwise, kCorrupt for a malformed header).
struct RewrappedHeader {
  size_t old_header_size = 0;  // bytes of `head` the new header replaces
  std::string header;          // for `to`, with its own MAC
};
RewrappedHeader rewrap_header(std::string_view head, const Identities& with, const Recipients& to);

// Bech32 (BIP 173, checksum constant 1, no length limit), for the key encodings; exposed for tests.
std::string bech32_encode(const std::string& hrp, const uint8_t* data, size_t size);
// nullopt for a malformed string (mixed case, bad checksum, bad padding). The HRP is returned in
// the case it was written in.
std::optional<std::pair<std::string, std::vector<uint8_t>>> bech32_decode(std::string_view text);

}  // namespace etcdadm::age

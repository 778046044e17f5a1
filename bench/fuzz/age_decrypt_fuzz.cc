// libFuzzer target for the age decryptor (store/age.h), which reads whatever an encrypted store
// holds (bench/docs/fuzz.md). The identity is the CCTV test kit's X25519 key and the
// passphrase theirs ("password"), so inputs derived from the kit's vectors reach the stanzas, the
// MAC and the payload; scrypt is capped at work factor 12 to keep runs fast. Only etcdadm::Error
// may come out.
#include <cstddef>
#include <cstdint>

#include "bench/fuzz/fuzz_target.h"
#include "store/age.h"

namespace {

class Discard : public etcdadm::ByteSink {
 public:
  void write(const uint8_t*, size_t) override {}
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const etcdadm::age::Identities ids = [] {
    etcdadm::age::Identities i;
    i.x25519 = {etcdadm::age::parse_identity("AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0")};
    i.passphrase = "password";
    i.max_scrypt_work_factor = 12;
    return i;
  }();
  Discard out;
  etcdadm::fuzz::refused_or_read([&] {
    auto d = etcdadm::age::make_decryptor(ids, out);
    // In two writes, so that the header is also parsed across a split.
    size_t half = size / 2;
    d->write(data, half);
    d->write(data + half, size - half);
    d->finish();
  });
  return 0;
}

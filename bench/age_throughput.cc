// The throughput of etcdadm's age stream alone (store/age), for bench/age_bench.sh to put next to
// Debian's `age` on the same file: encrypts IN to OUT for RECIPIENT, then decrypts OUT with the
// identity file, discarding the plaintext, and prints one JSON line with each direction's wall
// and CPU seconds and MB/s (10^6 bytes). One thread each way, as in a save or a restore.
//
//   age_throughput IN OUT RECIPIENT IDENTITY_FILE
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "common/error.h"
#include "common/fs.h"
#include "store/age.h"

namespace {

class FileSink : public etcdadm::ByteSink {
 public:
  explicit FileSink(const std::string& path) : f_(std::fopen(path.c_str(), "wb")) {
    if (f_ == nullptr) throw etcdadm::Error(etcdadm::ErrorKind::kIo, "cannot create " + path);
  }
  ~FileSink() override { std::fclose(f_); }
  void write(const uint8_t* d, size_t n) override {
    if (std::fwrite(d, 1, n, f_) != n) throw etcdadm::Error(etcdadm::ErrorKind::kIo, "write failed");
  }

 private:
  std::FILE* f_;
};

class NullSink : public etcdadm::ByteSink {
 public:
  void write(const uint8_t*, size_t n) override { bytes += n; }
  uint64_t bytes = 0;
};

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Timing {
  double wall = 0, cpu = 0;
};

template <typename F>
Timing timed(F f) {
  auto w0 = std::chrono::steady_clock::now();
  double c0 = cpu_seconds();
  f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count(), cpu_seconds() - c0};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: age_throughput IN OUT RECIPIENT IDENTITY_FILE\n");
    return 2;
  }
  try {
    const std::string in = argv[1], out = argv[2];
    etcdadm::age::Recipients to;
    to.x25519 = {etcdadm::age::parse_recipient(argv[3])};
    etcdadm::age::Identities with;
    with.x25519 = etcdadm::age::parse_identity_file(etcdadm::read_file(argv[4]), argv[4]);
    uint64_t plain = 0;
    Timing enc = timed([&] {
      FileSink sink(out);
      auto e = etcdadm::age::make_encryptor(to, sink);
      etcdadm::read_file_chunks(in, [&](const uint8_t* d, size_t n) {
        e->write(d, n);
        plain += n;
      });
      e->finish();
    });
    NullSink discard;
    Timing dec = timed([&] {
      auto d = etcdadm::age::make_decryptor(with, discard);
      etcdadm::read_file_chunks(out, [&](const uint8_t* p, size_t n) { d->write(p, n); });
      d->finish();
    });
    if (discard.bytes != plain) throw etcdadm::Error(etcdadm::ErrorKind::kCorrupt, "round trip lost bytes");
    auto mbps = [&](double s) { return s > 0 ? plain / 1e6 / s : 0.0; };
    std::printf(
        "{\"bytes\":%llu,\"encryptWall\":%.3f,\"encryptCpu\":%.3f,\"encryptMBps\":%.1f,\"encryptMBpsPerCpuSecond\":%.1f,"
        "\"decryptWall\":%.3f,\"decryptCpu\":%.3f,\"decryptMBps\":%.1f,\"decryptMBpsPerCpuSecond\":%.1f}\n",
        static_cast<unsigned long long>(plain), enc.wall, enc.cpu, mbps(enc.wall), mbps(enc.cpu), dec.wall, dec.cpu,
        mbps(dec.wall), mbps(dec.cpu));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "age_throughput: %s\n", e.what());
    return 1;
  }
  return 0;
}

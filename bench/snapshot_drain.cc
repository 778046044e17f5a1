// Measures the ceiling of the snapshot stream: reads Maintenance.Snapshot from one member and
// discards it (no hashing, no compression, no disk). Whatever `backup save` costs beyond this
// is ours; this much is the server's. Usage: snapshot_drain <endpoint>
#include <chrono>
#include <cstdio>

#include "etcd/client.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <endpoint>\n", argv[0]);
    return 2;
  }
  etcdadm::ConnectionConfig config;
  config.endpoints = {argv[1]};
  etcdadm::EtcdClient client(config);
  auto t0 = std::chrono::steady_clock::now();
  auto result = client.snapshot(argv[1], [](std::string_view, uint64_t) {}, std::chrono::seconds(30));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%llu bytes in %.3f s (%.1f MB/s)\n", static_cast<unsigned long long>(result.bytes), secs,
              result.bytes / secs / 1e6);
  return 0;
}

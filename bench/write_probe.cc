// A client that writes one small key after another through ONE member's client URL until it is
// stopped (SIGTERM, SIGINT), and then prints what it saw as JSON on stdout: how many writes
// succeeded, the longest time between two successful writes (the stall its users would see), and
// every stall over --report-ms with when it started (milliseconds since the probe started), so
// that a benchmark can tell which member's maintenance caused which stall.
//
//   write_probe --endpoint https://127.0.0.1:2379 --cacert ca.crt --cert c.crt --key c.key [--key-name /bench/probe]
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "etcd/client.h"

namespace {

std::atomic<bool> stop{false};
void on_signal(int) { stop = true; }

const char* arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  etcdadm::ConnectionConfig c;
  c.endpoints = {arg(argc, argv, "--endpoint", "https://127.0.0.1:2379")};
  c.cacert = arg(argc, argv, "--cacert", "");
  c.cert = arg(argc, argv, "--cert", "");
  c.key = arg(argc, argv, "--key", "");
  c.dial_timeout = std::chrono::seconds(2);
  c.command_timeout = std::chrono::seconds(60);  // a stall is measured, not cut short
  const std::string key = arg(argc, argv, "--key-name", "/bench/probe");
  const int64_t report_ms = std::atoll(arg(argc, argv, "--report-ms", "100"));
  etcdadm::EtcdClient client(c);
  const auto start = Clock::now();
  auto last_ok = start;
  int64_t writes = 0, failures = 0, longest = 0;
  std::vector<std::pair<int64_t, int64_t>> stalls;  // (started at ms, lasted ms)
  std::string last_error;
  while (!stop) {
    try {
      client.put(key, std::to_string(writes));
      const auto now = Clock::now();
      const int64_t gap = duration_cast<milliseconds>(now - last_ok).count();
      if (gap > longest) longest = gap;
      if (gap >= report_ms) stalls.push_back({duration_cast<milliseconds>(last_ok - start).count(), gap});
      last_ok = now;
      ++writes;
    } catch (const std::exception& e) {
      ++failures;
      last_error = e.what();
    }
  }
  std::printf("{\"endpoint\":\"%s\",\"writes\":%lld,\"failures\":%lld,\"longestGapMs\":%lld,\"seconds\":%.1f,\"stalls\":[",
              c.endpoints[0].c_str(), static_cast<long long>(writes), static_cast<long long>(failures),
              static_cast<long long>(longest),
              duration_cast<milliseconds>(Clock::now() - start).count() / 1000.0);
  for (size_t i = 0; i < stalls.size(); ++i) {
    std::printf("%s{\"atMs\":%lld,\"ms\":%lld}", i ? "," : "", static_cast<long long>(stalls[i].first),
                static_cast<long long>(stalls[i].second));
  }
  std::printf("]}\n");
  if (!last_error.empty()) std::fprintf(stderr, "last error: %s\n", last_error.c_str());
  return 0;
}

#include "common/retry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <thread>

namespace etcdadm {

bool is_retryable(const Error& e) { return e.kind() == ErrorKind::kUnavailable || e.kind() == ErrorKind::kTimeout; }

std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  int64_t cap = policy.base_delay.count();
  for (int i = 1; i < attempt && cap < policy.max_delay.count(); ++i) cap *= 2;
  cap = std::min<int64_t>(cap, policy.max_delay.count());
  std::uniform_int_distribution<int64_t> dist(0, std::max<int64_t>(cap, 0));
  return std::chrono::milliseconds(dist(rng));
}

void with_retries(const RetryPolicy& policy, const std::string& what, const std::function<void()>& fn) {
  const auto started = std::chrono::steady_clock::now();
  for (int attempt = 1;; ++attempt) {
    try {
      fn();
      return;
    } catch (const Error& e) {
      if (!is_retryable(e)) throw;
      if (attempt >= policy.max_attempts && std::chrono::steady_clock::now() - started >= policy.min_elapsed) {
        throw Error(e.kind(), what + " failed after " + std::to_string(attempt) + " attempts: " + e.what(), e.hint());
      }
      auto wait = backoff_delay(policy, attempt);
      spdlog::warn("{}: {} (attempt {}/{}, retrying in {} ms)", what, e.what(), attempt, policy.max_attempts,
                   wait.count());
      std::this_thread::sleep_for(wait);
    }
  }
}

}  // namespace etcdadm

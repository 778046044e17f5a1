// A token bucket: `rate` tokens a second, at most `burst` saved up, for bounding how often a
// client may make a server do something. Thread-safe. Time is passed in, so tests need no sleeps.
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>

namespace etcdadm {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  TokenBucket(double rate_per_second, double burst, Clock::time_point now = Clock::now())
      : rate_(rate_per_second), burst_(burst), tokens_(burst), last_(now) {}

  // Takes one token when there is one.
  bool try_take(Clock::time_point now = Clock::now()) {
    std::lock_guard<std::mutex> lock(mu_);
    refill(now);
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
  }

  // True when the next try_take() would fail (nothing is taken).
  bool exhausted(Clock::time_point now = Clock::now()) {
    std::lock_guard<std::mutex> lock(mu_);
    refill(now);
    return tokens_ < 1;
  }

 private:
  void refill(Clock::time_point now) {
    if (now > last_) {
      tokens_ = std::min(burst_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
      last_ = now;
    }
  }
  std::mutex mu_;
  double rate_, burst_, tokens_;
  Clock::time_point last_;
};

}  // namespace etcdadm

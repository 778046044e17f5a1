// Runs work(0) .. work(count - 1) on up to `threads` threads (the caller's own when one is enough).
// Items are taken in order; the first exception stops the taking of new items and is rethrown
// once every thread has finished the item it had. Work that must not stop at one item's failure
// catches its own errors.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace etcdadm {

template <typename Work>
void for_each_index_in_parallel(size_t count, size_t threads, Work&& work) {
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mu;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mu);
        if (!failure) failure = std::current_exception();
        next = count;
      }
    }
  };
  threads = std::min(threads, count);
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace etcdadm

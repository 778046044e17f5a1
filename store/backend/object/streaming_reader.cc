#include "store/backend/object/streaming_reader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace etcdadm {

namespace {
constexpr size_t kPieceSize = 1u << 20;
constexpr size_t kMaxQueued = 8;
struct Cancelled {};
}  // namespace

StreamingReader::StreamingReader(std::string what, uint64_t size, RetryPolicy policy, FetchFn fetch)
    : what_(std::move(what)), size_(size), policy_(policy), fetch_(std::move(fetch)) {
  thread_ = std::thread([this] { run(); });
}

StreamingReader::~StreamingReader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

size_t StreamingReader::read(uint8_t* buffer, size_t size) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!chunks_.empty()) {
      std::string& front = chunks_.front();
      size_t n = std::min(size, front.size() - front_pos_);
      std::memcpy(buffer, front.data() + front_pos_, n);
      front_pos_ += n;
      if (front_pos_ == front.size()) {
        chunks_.pop_front();
        front_pos_ = 0;
        cv_.notify_all();
      }
      return n;
    }
    if (error_) std::rethrow_exception(error_);
    if (finished_) return 0;
    cv_.wait(lock);
  }
}

void StreamingReader::run() {
  uint64_t offset = 0;
  int failures = 0;
  std::string pending;
  auto hand_over = [&] {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return chunks_.size() < kMaxQueued || cancelled_; });
    if (cancelled_) throw Cancelled{};
    chunks_.push_back(std::move(pending));
    pending = std::string();
    cv_.notify_all();
  };
  auto fail = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = e;
    cv_.notify_all();
  };
  uint64_t offset_at_failure = 0;
  for (;;) {
    try {
      if (offset < size_) {
        fetch_(offset, [&](const char* data, size_t n) {
          if (offset + n > size_) {
            throw Error(ErrorKind::kCorrupt,
                        what_ + " is longer than the " + std::to_string(size_) + " bytes it had when it was opened");
          }
          pending.append(data, n);
          offset += n;
          if (pending.size() >= kPieceSize) hand_over();
        });
      }
      if (!pending.empty()) hand_over();
      if (offset != size_) {
        throw Error(ErrorKind::kUnavailable, "download of " + what_ + " ended at byte " + std::to_string(offset) +
                                                 " of " + std::to_string(size_));
      }
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      cv_.notify_all();
      return;
    } catch (const Cancelled&) {
      return;
    } catch (const Error& e) {
      try {
        if (!pending.empty()) hand_over();  // bytes received before the break are good
      } catch (const Cancelled&) {
        return;
      }
      if (!is_retryable(e)) return fail(std::current_exception());
      // The budget is for consecutive failures: a resume that made progress starts it afresh.
      if (offset > offset_at_failure) failures = 0;
      offset_at_failure = offset;
      if (++failures >= policy_.max_attempts) {
        return fail(std::make_exception_ptr(
            e.wrap("download of " + what_ + " failed after " + std::to_string(failures) + " attempts")));
      }
      auto wait = backoff_delay(policy_, failures);
      spdlog::warn("download of {}: {} (resuming at byte {} in {} ms)", what_, e.what(), offset, wait.count());
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, wait, [&] { return cancelled_; })) return;
    } catch (...) {
      return fail(std::current_exception());
    }
  }
}

}  // namespace etcdadm

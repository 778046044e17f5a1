#include "common/async_sink.h"

#include <unistd.h>

#include <cstring>

#include "common/cpu_priority.h"

namespace etcdadm {

AsyncSink::AsyncSink(ByteSink& next, size_t buffer_size, size_t max_buffers, int worker_nice_increment)
    : next_(next), buffer_size_(buffer_size), max_buffers_(max_buffers) {
  worker_nice_ = worker_nice_increment > 0 ? current_thread_nice() + worker_nice_increment : 0;
  current_.reserve(buffer_size_);
  thread_ = std::thread([this] { worker(); });
}

AsyncSink::~AsyncSink() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AsyncSink::rethrow_if_failed() {
  if (error_) std::rethrow_exception(error_);
}

void AsyncSink::submit_current() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.size() < max_buffers_ || error_; });
  rethrow_if_failed();
  queue_.push_back(std::move(current_));
  if (!free_.empty()) {
    current_ = std::move(free_.back());
    free_.pop_back();
  } else {
    current_ = std::vector<uint8_t>();
    current_.reserve(buffer_size_);
  }
  current_.clear();
  lock.unlock();
  cv_.notify_all();
}

void AsyncSink::write(const uint8_t* data, size_t size) {
  while (size > 0) {
    size_t room = buffer_size_ - current_.size();
    size_t n = size < room ? size : room;
    current_.insert(current_.end(), data, data + n);
    data += n;
    size -= n;
    if (current_.size() == buffer_size_) submit_current();
  }
}

void AsyncSink::close() {
  if (!current_.empty()) submit_current();
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  rethrow_if_failed();
}

void AsyncSink::worker() {
  if (worker_nice_ != 0) set_current_thread_nice(worker_nice_);
  for (;;) {
    std::vector<uint8_t> buf;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || closing_ || stop_; });
      if (stop_ || (queue_.empty() && closing_)) return;
      buf = std::move(queue_.front());
      queue_.pop_front();
    }
    cv_.notify_all();
    try {
      next_.write(buf.data(), buf.size());
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      queue_.clear();
      cv_.notify_all();
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < 2) free_.push_back(std::move(buf));
  }
}

}  // namespace etcdadm

// A ByteSink that hands its input to a worker thread, which writes it to the next sink. Used to put
// the two expensive stages of a pipeline (e.g. receiving+hashing vs. compressing+writing) on
// different cores. Memory is bounded: at most `max_buffers` buffers of `buffer_size` are in flight.
// An exception in the worker is rethrown by the next write() or by close(). A positive
// `worker_nice_increment` runs the worker that much below the creating thread's CPU priority
// (see backup/save.cc for why).
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "common/byte_sink.h"

namespace etcdadm {

class AsyncSink : public ByteSink {
 public:
  AsyncSink(ByteSink& next, size_t buffer_size = 1 << 20, size_t max_buffers = 8, int worker_nice_increment = 0);
  ~AsyncSink() override;  // stops the worker, dropping queued data (use close() to flush)
  void write(const uint8_t* data, size_t size) override;
  // Flushes everything to the next sink and joins the worker; rethrows its error.
  void close();

 private:
  void worker();
  void submit_current();
  void rethrow_if_failed();

  ByteSink& next_;
  size_t buffer_size_;
  size_t max_buffers_;
  int worker_nice_;
  std::vector<uint8_t> current_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<uint8_t>> queue_;
  std::vector<std::vector<uint8_t>> free_;
  bool closing_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace etcdadm

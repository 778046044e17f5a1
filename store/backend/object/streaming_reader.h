// A BlobReader over one streaming HTTP download, shared by the S3 and GCS backends.
//
// A background thread runs `fetch(offset, sink)` (one GET from `offset` to the end) and queues
// what arrives in ~1 MiB pieces (at most 8 queued: bounded memory). When the connection breaks
// with a retryable error (see common/retry.h), the bytes already received are kept and the fetch
// is re-issued from the byte reached, after a backoff: a dropped connection costs a reconnect, not
// the download. The backend pins the object version in `fetch` (ETag / generation) so a resumed
// read never splices two versions.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/http_client.h"
#include "common/retry.h"
#include "store/blob_store.h"

namespace etcdadm {

class StreamingReader : public BlobReader {
 public:
  using FetchFn = std::function<void(uint64_t offset, const HttpBodySink& sink)>;

  // `what` names the object in messages ("s3://bucket/key").
  StreamingReader(std::string what, uint64_t size, RetryPolicy policy, FetchFn fetch);
  ~StreamingReader() override;  // cancels the download

  size_t read(uint8_t* buffer, size_t size) override;
  uint64_t size() const override { return size_; }

 private:
  void run();

  std::string what_;
  uint64_t size_;
  RetryPolicy policy_;
  FetchFn fetch_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> chunks_;
  size_t front_pos_ = 0;
  bool finished_ = false;
  bool cancelled_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace etcdadm

// Uploading a blob as numbered parts in parallel, with bounded memory: the writer of each object
// store backend that splits large objects (S3 multipart parts, Azure staged blocks) fills one part
// while up to `concurrency` others upload, each on a worker thread. The first failure stops the
// upload: later submit() and finish() calls rethrow it.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace etcdadm {

class ParallelPartUploader {
 public:
  // Uploads part `number` (1-based) and returns what the backend needs to commit it (an ETag, a
  // block ID). Called on worker threads, at most `concurrency` at a time.
  using UploadFn = std::function<std::string(int number, const std::string& data)>;

  ParallelPartUploader(int concurrency, UploadFn upload);
  ~ParallelPartUploader();  // drops what is queued and waits for the uploads under way
  ParallelPartUploader(const ParallelPartUploader&) = delete;
  ParallelPartUploader& operator=(const ParallelPartUploader&) = delete;

  // Queues a part; blocks while `concurrency` parts are queued or uploading.
  void submit(int number, std::string data);
  // Waits for every submitted part; returns the upload results of parts 1..N in order.
  std::vector<std::string> finish();
  // Drops what is queued and waits for the uploads under way (idempotent).
  void cancel();

 private:
  struct Part {
    int number = 0;
    std::string data;
  };
  void work();
  void stop(bool drop_queued);

  int concurrency_;
  UploadFn upload_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Part> queue_;
  int in_flight_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::map<int, std::string> results_;
  std::vector<std::thread> workers_;
};

}  // namespace etcdadm

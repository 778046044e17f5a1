#include "store/backend/object/part_uploader.h"

#include <algorithm>

#include "common/error.h"

namespace etcdadm {

ParallelPartUploader::ParallelPartUploader(int concurrency, UploadFn upload)
    : concurrency_(std::max(1, concurrency)), upload_(std::move(upload)) {
  for (int i = 0; i < concurrency_; ++i) workers_.emplace_back([this] { work(); });
}

ParallelPartUploader::~ParallelPartUploader() { cancel(); }

void ParallelPartUploader::submit(int number, std::string data) {
  std::unique_lock<std::mutex> lock(mu_);
  // Bounded memory: at most `concurrency` parts queued or uploading, plus the one being filled.
  cv_.wait(lock, [&] { return in_flight_ < concurrency_ || error_; });
  if (error_) std::rethrow_exception(error_);
  if (stopping_) throw Error(ErrorKind::kInternal, "part submitted after the upload stopped");
  queue_.push_back(Part{number, std::move(data)});
  ++in_flight_;
  lock.unlock();
  cv_.notify_all();
}

std::vector<std::string> ParallelPartUploader::finish() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return in_flight_ == 0 || error_; });
  std::exception_ptr err = error_;
  lock.unlock();
  if (err) std::rethrow_exception(err);
  stop(/*drop_queued=*/false);
  std::vector<std::string> out;
  for (int i = 1; i <= static_cast<int>(results_.size()); ++i) {
    auto it = results_.find(i);
    if (it == results_.end()) throw Error(ErrorKind::kInternal, "part " + std::to_string(i) + " was never uploaded");
    out.push_back(it->second);
  }
  return out;
}

void ParallelPartUploader::cancel() { stop(/*drop_queued=*/true); }

void ParallelPartUploader::work() {
  for (;;) {
    Part p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (stopping_ && (queue_.empty() || error_)) return;
      p = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      std::string result = upload_(p.number, p.data);
      std::lock_guard<std::mutex> lock(mu_);
      results_[p.number] = std::move(result);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      --in_flight_;
    }
    cv_.notify_all();
  }
}

void ParallelPartUploader::stop(bool drop_queued) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (drop_queued || error_) {
      in_flight_ -= static_cast<int>(queue_.size());
      queue_.clear();
    }
  }
  cv_.notify_all();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
}

}  // namespace etcdadm

#include "restore/segment_read_ahead.h"

#include <algorithm>

namespace etcdadm {

SegmentReadAhead::SegmentReadAhead(const BackupStore& backups, std::vector<changelog::SegmentName> chain,
                                   std::vector<changelog::SegmentName> all, size_t threads, size_t ahead,
                                   uint64_t bytes_per_segment)
    : backups_(backups),
      chain_(std::move(chain)),
      all_(std::move(all)),
      ahead_(std::max<size_t>(ahead, 1)),
      bytes_per_segment_(bytes_per_segment),
      slots_(chain_.size()) {
  threads = std::clamp<size_t>(threads, 1, std::max<size_t>(chain_.size(), 1));
  for (size_t t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
}

SegmentReadAhead::~SegmentReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  room_.notify_all();
  for (auto& w : workers_) w.join();
}

size_t SegmentReadAhead::default_threads() {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<size_t>(cores - 1, 1, 4);
}

void SegmentReadAhead::work() {
  for (;;) {
    size_t i;
    {
      std::unique_lock<std::mutex> lock(mu_);
      room_.wait(lock,
                 [&] { return stop_ || next_to_read_ >= chain_.size() || next_to_read_ < next_to_take_ + ahead_; });
      if (stop_ || next_to_read_ >= chain_.size()) return;
      i = next_to_read_++;
    }
    std::exception_ptr error;
    try {
      changelog::read_segment_or_twin(backups_, chain_[i], all_, [&](const changelog::Record& rec) {
        PreparedRecord prepared = prepare_record(rec);
        const uint64_t bytes = prepared.bytes;
        {
          std::unique_lock<std::mutex> lock(mu_);
          Slot& slot = slots_[i];
          room_.wait(lock, [&] { return stop_ || slot.bytes == 0 || slot.bytes + bytes <= bytes_per_segment_; });
          if (stop_) throw Stopped{};
          slot.records.push_back(std::move(prepared));
          slot.bytes += bytes;
        }
        ready_.notify_all();
      });
    } catch (const Stopped&) {
      return;
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots_[i].done = true;
      slots_[i].error = error;
    }
    ready_.notify_all();
  }
}

std::optional<PreparedRecord> SegmentReadAhead::next() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (next_to_take_ >= chain_.size()) return std::nullopt;
    Slot& slot = slots_[next_to_take_];
    begun_ = std::max(begun_, next_to_take_ + 1);
    ready_.wait(lock, [&] { return !slot.records.empty() || slot.done; });
    if (!slot.records.empty()) {
      PreparedRecord rec = std::move(slot.records.front());
      slot.records.pop_front();
      slot.bytes -= rec.bytes;
      lock.unlock();
      room_.notify_all();
      return rec;
    }
    std::exception_ptr error = std::exchange(slot.error, nullptr);
    ++next_to_take_;
    lock.unlock();
    room_.notify_all();
    if (error) std::rethrow_exception(error);
    lock.lock();
  }
}

}  // namespace etcdadm

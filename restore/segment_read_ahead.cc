#include "restore/segment_read_ahead.h"

#include <algorithm>

namespace etcdadm {

SegmentReadAhead::SegmentReadAhead(const BackupStore& backups, std::vector<changelog::SegmentName> chain,
                                   std::vector<changelog::SegmentName> all, size_t threads, size_t ahead)
    : backups_(backups), chain_(std::move(chain)), all_(std::move(all)), ahead_(std::max<size_t>(ahead, 1)),
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
      room_.wait(lock, [&] { return stop_ || next_to_read_ >= chain_.size() || next_to_read_ < next_to_take_ + ahead_; });
      if (stop_ || next_to_read_ >= chain_.size()) return;
      i = next_to_read_++;
    }
    Slot slot;
    try {
      changelog::read_segment_or_twin(backups_, chain_[i], all_, [&](const changelog::Record& rec) {
        slot.records.push_back(prepare_record(rec));
      });
    } catch (...) {
      slot.error = std::current_exception();
      slot.records.clear();
    }
    slot.done = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots_[i] = std::move(slot);
    }
    ready_.notify_all();
  }
}

std::optional<std::vector<PreparedRecord>> SegmentReadAhead::next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (next_to_take_ >= chain_.size()) return std::nullopt;
  const size_t i = next_to_take_;
  ready_.wait(lock, [&] { return slots_[i].done; });
  Slot slot = std::move(slots_[i]);
  slots_[i] = Slot{};
  ++next_to_take_;
  lock.unlock();
  room_.notify_all();
  if (slot.error) std::rethrow_exception(slot.error);
  return std::move(slot.records);
}

}  // namespace etcdadm

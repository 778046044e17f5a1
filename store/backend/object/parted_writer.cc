#include "store/backend/object/parted_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"

namespace etcdadm {

PartedWriter::PartedWriter(std::unique_ptr<PartedUpload> upload, int concurrency)
    : upload_(std::move(upload)), concurrency_(std::max(1, concurrency)) {
  buffer_.reserve(upload_->part_size(1));
}

PartedWriter::~PartedWriter() {
  try {
    abort();
  } catch (const std::exception& e) {
    spdlog::warn("cleaning up the unfinished upload of {} failed: {}", upload_->where(), e.what());
  }
}

void PartedWriter::write(const uint8_t* data, size_t size) {
  if (done_) throw Error(ErrorKind::kInternal, "write after commit/abort of " + upload_->where());
  while (size > 0) {
    size_t part = upload_->part_size(next_part_);
    size_t n = std::min(size, part - buffer_.size());
    buffer_.append(reinterpret_cast<const char*>(data), n);
    data += n;
    size -= n;
    written_ += n;
    if (buffer_.size() == part) submit_part();
  }
}

void PartedWriter::commit() {
  if (done_) throw Error(ErrorKind::kInternal, "commit after commit/abort of " + upload_->where());
  if (!parts_) {
    upload_->put_whole(buffer_);
  } else {
    if (!buffer_.empty()) submit_part();
    upload_->complete(parts_->finish(), sizes_);
  }
  done_ = true;
  buffer_ = std::string();
}

void PartedWriter::abort() {
  if (done_) return;
  done_ = true;
  buffer_ = std::string();
  if (!parts_) return;
  parts_->cancel();
  upload_->abandon(next_part_ - 1);
}

void PartedWriter::submit_part() {
  if (next_part_ > upload_->max_parts()) {
    throw Error(ErrorKind::kInvalidArgument,
                upload_->where() + " would need more than " + std::to_string(upload_->max_parts()) + " parts",
                "raise --upload-part-size");
  }
  if (!parts_) {
    upload_->begin();
    parts_ = std::make_unique<ParallelPartUploader>(
        concurrency_, [this](int number, const std::string& data) { return upload_->put_part(number, data); });
  }
  int number = next_part_++;
  sizes_.push_back(buffer_.size());
  std::string data = std::move(buffer_);
  buffer_ = std::string();
  buffer_.reserve(upload_->part_size(next_part_));
  parts_->submit(number, std::move(data));
}

}  // namespace etcdadm

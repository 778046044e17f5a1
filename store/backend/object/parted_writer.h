// The writer of every object store that uploads large objects in parts (S3 multipart uploads,
// Azure staged blocks, Swift static large objects), as one state machine: bytes fill the current
// part; a full part is queued and sent on a worker thread, up to `concurrency` at once, while the
// next one fills (bounded memory: concurrency + 1 parts); commit() either sends an object that fit
// in its first part in one request, or waits for every part and makes them the object in one step.
// Until that step nothing is visible. The first failure of any part fails the write or the commit.
//
// What differs per backend is the PartedUpload below: how big each part is, how many the backend
// accepts, and the requests that begin, send, complete and abandon an upload.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "store/backend/object/part_uploader.h"
#include "store/blob_store.h"

namespace etcdadm {

// One object's upload in parts, as a backend does it.
class PartedUpload {
 public:
  virtual ~PartedUpload() = default;
  // The object as messages name it ("s3://bucket/key").
  virtual std::string where() const = 0;
  // The size of part `number` (1-based). A backend may let later parts grow, so that the largest
  // objects fit under its part limit.
  virtual size_t part_size(int number) const = 0;
  // The most parts the backend accepts in one object.
  virtual int max_parts() const = 0;
  // The whole object in one request (it fit in its first part).
  virtual void put_whole(std::string_view data) = 0;
  // Before the first part is sent (S3: CreateMultipartUpload; Swift: the segments' container).
  virtual void begin() = 0;
  // Sends part `number`; returns what complete() needs of it (an ETag, a block ID). Called on
  // worker threads, several at a time.
  virtual std::string put_part(int number, const std::string& data) = 0;
  // Makes parts 1..N, in order, the object in one step; `results` are put_part's answers and
  // `sizes` the parts' byte counts.
  virtual void complete(const std::vector<std::string>& results, const std::vector<uint64_t>& sizes) = 0;
  // The upload will not be completed: removes what begin() and the `parts` parts sent left (S3
  // aborts the multipart upload, Swift deletes the segments; Azure discards uncommitted blocks by
  // itself).
  virtual void abandon(int parts) = 0;
};

class PartedWriter : public BlobWriter {
 public:
  PartedWriter(std::unique_ptr<PartedUpload> upload, int concurrency);
  ~PartedWriter() override;  // abort(); a cleanup that fails is logged, the leftovers named

  void write(const uint8_t* data, size_t size) override;
  void commit() override;
  void abort() override;
  uint64_t bytes_written() const override { return written_; }

 private:
  void submit_part();

  std::unique_ptr<PartedUpload> upload_;
  int concurrency_;
  std::string buffer_;
  std::vector<uint64_t> sizes_;
  int next_part_ = 1;
  uint64_t written_ = 0;
  bool done_ = false;
  std::unique_ptr<ParallelPartUploader> parts_;  // from the first full part on
};

}  // namespace etcdadm

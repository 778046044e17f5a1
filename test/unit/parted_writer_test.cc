// Tests of store/backend/object/parted_writer.{h,cc}: an object written in parts of growing size,
// against a recording upload.
#include "store/backend/object/parted_writer.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"

namespace etcdadm {
namespace {

// What the parted writer asked of its upload.
struct Recorded {
  std::mutex mu;
  std::string whole;
  bool whole_sent = false;
  int begun = 0;
  std::map<int, std::string> parts;
  std::vector<std::string> completed;
  std::vector<uint64_t> completed_sizes;
  int abandoned = -1;
  int fail_part = 0;  // this part's upload throws
};

class RecordingUpload : public PartedUpload {
 public:
  explicit RecordingUpload(Recorded& r) : r_(r) {}
  std::string where() const override { return "test://object"; }
  size_t part_size(int number) const override { return number <= 2 ? 4 : 8; }  // later parts grow
  int max_parts() const override { return 4; }
  void put_whole(std::string_view data) override {
    r_.whole = std::string(data);
    r_.whole_sent = true;
  }
  void begin() override { ++r_.begun; }
  std::string put_part(int number, const std::string& data) override {
    if (number == r_.fail_part) throw Error(ErrorKind::kUnavailable, "part " + std::to_string(number) + " failed");
    std::lock_guard<std::mutex> lock(r_.mu);
    r_.parts[number] = data;
    return "etag" + std::to_string(number);
  }
  void complete(const std::vector<std::string>& results, const std::vector<uint64_t>& sizes) override {
    r_.completed = results;
    r_.completed_sizes = sizes;
  }
  void abandon(int parts) override { r_.abandoned = parts; }

 private:
  Recorded& r_;
};

void write(BlobWriter& w, const std::string& s) { w.write(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

TEST(PartedWriter, AnObjectThatFitsItsFirstPartIsOneRequest) {
  Recorded r;
  PartedWriter w(std::make_unique<RecordingUpload>(r), 2);
  write(w, "abc");
  w.commit();
  EXPECT_TRUE(r.whole_sent);
  EXPECT_EQ(r.whole, "abc");
  EXPECT_EQ(r.begun, 0);
  EXPECT_EQ(w.bytes_written(), 3u);
}

TEST(PartedWriter, PartsOfGrowingSizeAreCompletedInOrderWithTheirSizes) {
  Recorded r;
  {
    PartedWriter w(std::make_unique<RecordingUpload>(r), 2);
    write(w, "0123456789");  // parts of 4, 4, then 8
    write(w, "abcdefghij");
    w.commit();
    EXPECT_EQ(w.bytes_written(), 20u);
  }
  EXPECT_FALSE(r.whole_sent);
  EXPECT_EQ(r.begun, 1);
  EXPECT_EQ(r.parts, (std::map<int, std::string>{{1, "0123"}, {2, "4567"}, {3, "89abcdef"}, {4, "ghij"}}));
  EXPECT_EQ(r.completed, (std::vector<std::string>{"etag1", "etag2", "etag3", "etag4"}));
  EXPECT_EQ(r.completed_sizes, (std::vector<uint64_t>{4, 4, 8, 4}));
  EXPECT_EQ(r.abandoned, -1) << "a committed upload was abandoned";
}

TEST(PartedWriter, AFailedPartFailsTheCommitAndTheUploadIsAbandoned) {
  Recorded r;
  r.fail_part = 2;
  {
    PartedWriter w(std::make_unique<RecordingUpload>(r), 1);
    try {
      write(w, std::string(16, 'x'));
      w.commit();
      ADD_FAILURE() << "the commit succeeded without part 2";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "part 2 failed");
    }
  }
  EXPECT_TRUE(r.completed.empty());
  EXPECT_GE(r.abandoned, 2);
}

TEST(PartedWriter, MorePartsThanTheBackendTakesIsRefusedWithTheFlagToRaise) {
  Recorded r;
  PartedWriter w(std::make_unique<RecordingUpload>(r), 2);
  try {
    write(w, std::string(4 + 4 + 8 + 8 + 8, 'x'));  // a fifth part
    ADD_FAILURE() << "a fifth part was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_STREQ(e.what(), "test://object would need more than 4 parts");
    EXPECT_EQ(e.hint(), "raise --upload-part-size");
  }
  w.abort();
  EXPECT_EQ(r.abandoned, 4);
  EXPECT_THROW(write(w, "x"), Error);
}

}  // namespace
}  // namespace etcdadm

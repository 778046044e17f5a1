// Tests of common/async_sink.{h,cc}: writes handed to another thread, in order, errors passed back.
#include "common/async_sink.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "common/byte_sink.h"
#include "test/support/sample_data.h"

namespace etcdadm {
namespace {

using test::sample;

TEST(AsyncSink, DeliversInOrderAndPropagatesErrors) {
  StringSink out;
  {
    AsyncSink async(out, 1000, 2);
    std::string in = sample(123457);
    for (size_t off = 0; off < in.size(); off += 777) {
      async.write(reinterpret_cast<const uint8_t*>(in.data() + off), std::min<size_t>(777, in.size() - off));
    }
    async.close();
    EXPECT_EQ(out.out, in);
  }
  struct Failing : ByteSink {
    void write(const uint8_t*, size_t) override { throw Error(ErrorKind::kIo, "disk full"); }
  } failing;
  AsyncSink async(failing, 100, 2);
  std::string in(100000, 'x');
  EXPECT_THROW(
      {
        for (size_t off = 0; off < in.size(); off += 100) async.write(reinterpret_cast<const uint8_t*>(in.data() + off), 100);
        async.close();
      },
      Error);
}

}  // namespace
}  // namespace etcdadm

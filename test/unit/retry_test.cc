// common/retry.h: attempts, and the minimum time retries go on for whatever the jitter drew.
#include "common/retry.h"

#include <gtest/gtest.h>

#include <chrono>

namespace etcdadm {
namespace {

TEST(Retry, AttemptsAloneCountUnlessAMinimumTimeIsGivenThenRetriesGoOnUntilItPassed) {
  RetryPolicy p;
  p.max_attempts = 2;
  p.base_delay = std::chrono::milliseconds(1);
  p.max_delay = std::chrono::milliseconds(1);
  int calls = 0;
  auto refused = [&] {
    ++calls;
    throw Error(ErrorKind::kUnavailable, "etcdserver: unhealthy cluster");
  };
  EXPECT_THROW(with_retries(p, "adding member m3", refused), Error);
  EXPECT_EQ(calls, 2);

  calls = 0;
  p.min_elapsed = std::chrono::milliseconds(100);
  const auto started = std::chrono::steady_clock::now();
  try {
    with_retries(p, "adding member m3", refused);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("adding member m3 failed after"), std::string::npos) << e.what();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(100));
  EXPECT_GT(calls, 2);

  // A refusal that does not heal by itself is never retried, whatever the minimum.
  calls = 0;
  EXPECT_THROW(with_retries(p, "x", [&] {
    ++calls;
    throw Error(ErrorKind::kAuth, "permission denied");
  }), Error);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace etcdadm

#include "common/token_bucket.h"

#include <gtest/gtest.h>

namespace etcdadm {

using namespace std::chrono_literals;

TEST(TokenBucket, ABurstThenTheRate) {
  auto t0 = TokenBucket::Clock::time_point{} + 1h;
  TokenBucket b(2, 5, t0);  // 2 a second, 5 at once
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(b.try_take(t0)) << i;
  EXPECT_TRUE(b.exhausted(t0));
  EXPECT_FALSE(b.try_take(t0));
  EXPECT_FALSE(b.try_take(t0 + 400ms));  // 0.8 of a token
  EXPECT_TRUE(b.try_take(t0 + 500ms));   // one whole token
  EXPECT_FALSE(b.try_take(t0 + 500ms));
  // Idle time saves up no more than the burst.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(b.try_take(t0 + 1h)) << i;
  EXPECT_FALSE(b.try_take(t0 + 1h));
}

TEST(TokenBucket, ExhaustedTakesNothingAndTimeNeverRunsBackwards) {
  auto t0 = TokenBucket::Clock::time_point{} + 1h;
  TokenBucket b(1, 1, t0);
  EXPECT_FALSE(b.exhausted(t0));
  EXPECT_FALSE(b.exhausted(t0));  // asking twice takes nothing
  EXPECT_TRUE(b.try_take(t0));
  EXPECT_TRUE(b.exhausted(t0 - 10s));  // an earlier time adds no tokens
  EXPECT_TRUE(b.try_take(t0 + 1s));
}

}  // namespace etcdadm

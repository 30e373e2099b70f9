#include "libs/kube/rate_limiter.h"

#include <gtest/gtest.h>

#include "libs/common/testing/fake_clock.h"

namespace mmi::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(TokenBucketRateLimiterTest, AllowsABurstThenSpacesRequestsAtTheRate) {
  mmi::testing::FakeClock clock;
  TokenBucketRateLimiter limiter({.qps = 10, .burst = 3}, clock);
  EXPECT_EQ(limiter.Reserve(), nanoseconds(0));
  EXPECT_EQ(limiter.Reserve(), nanoseconds(0));
  EXPECT_EQ(limiter.Reserve(), nanoseconds(0));
  // The bucket is empty: each further request waits one more 1/qps slot.
  EXPECT_EQ(limiter.Reserve(), milliseconds(100));
  EXPECT_EQ(limiter.Reserve(), milliseconds(200));
}

TEST(TokenBucketRateLimiterTest, RefillsWithTimeButNeverAboveTheBurst) {
  mmi::testing::FakeClock clock;
  TokenBucketRateLimiter limiter({.qps = 10, .burst = 2}, clock);
  EXPECT_EQ(limiter.Reserve(), nanoseconds(0));
  EXPECT_EQ(limiter.Reserve(), nanoseconds(0));
  clock.Advance(milliseconds(100));  // one token back
  EXPECT_EQ(limiter.Reserve(), nanoseconds(0));
  EXPECT_EQ(limiter.Reserve(), milliseconds(100));
  clock.Advance(std::chrono::hours(1));  // long idle: only `burst` tokens accumulate
  EXPECT_EQ(limiter.Reserve(), nanoseconds(0));
  EXPECT_EQ(limiter.Reserve(), nanoseconds(0));
  EXPECT_EQ(limiter.Reserve(), milliseconds(100));
}

TEST(TokenBucketRateLimiterTest, IsDisabledByANonPositiveQps) {
  mmi::testing::FakeClock clock;
  TokenBucketRateLimiter limiter({.qps = 0, .burst = 1}, clock);
  EXPECT_FALSE(limiter.Enabled());
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(limiter.Reserve(), nanoseconds(0));
  }
}

TEST(TokenBucketRateLimiterTest, TreatsABurstBelowOneAsOne) {
  mmi::testing::FakeClock clock;
  TokenBucketRateLimiter limiter({.qps = 4, .burst = 0}, clock);
  EXPECT_EQ(limiter.Reserve(), nanoseconds(0));
  EXPECT_EQ(limiter.Reserve(), milliseconds(250));
}

}  // namespace
}  // namespace mmi::kube

#include "services/dispatcher/gitops/retry_schedule.h"

#include <gtest/gtest.h>

#include "libs/common/testing/fake_clock.h"

namespace mmi::dispatcher {
namespace {

using std::chrono::milliseconds;

constexpr BackoffSettings kBackoff{
    .initial = milliseconds(1000), .max = milliseconds(8000), .multiplier = 2.0, .jitter = 0.0};

TEST(RetryScheduleTest, AKeyIsDueAfterItsDelayAndTakenOnce) {
  mmi::testing::FakeClock clock;
  RetrySchedule retries(clock, kBackoff);
  EXPECT_FALSE(retries.NextDue().has_value());
  EXPECT_EQ(retries.Schedule("g:ns/a"), milliseconds(1000));
  EXPECT_EQ(retries.NextDue(), clock.MonotonicNow() + milliseconds(1000));
  EXPECT_TRUE(retries.TakeDue(clock.MonotonicNow()).empty());
  clock.Advance(milliseconds(1000));
  EXPECT_EQ(retries.TakeDue(clock.MonotonicNow()), std::vector<std::string>{"g:ns/a"});
  EXPECT_TRUE(retries.TakeDue(clock.MonotonicNow()).empty());
  EXPECT_FALSE(retries.NextDue().has_value());
}

TEST(RetryScheduleTest, EachFailureWaitsLongerUntilASuccessIsForgotten) {
  mmi::testing::FakeClock clock;
  RetrySchedule retries(clock, kBackoff);
  EXPECT_EQ(retries.Schedule("o"), milliseconds(1000));
  EXPECT_EQ(retries.Schedule("o"), milliseconds(2000));
  EXPECT_EQ(retries.Schedule("g:ns/b"), milliseconds(1000)) << "per key";
  retries.Forget("o");
  EXPECT_EQ(retries.Schedule("o"), milliseconds(1000));
}

}  // namespace
}  // namespace mmi::dispatcher

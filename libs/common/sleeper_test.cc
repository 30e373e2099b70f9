#include "libs/common/sleeper.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <thread>

#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/fake_sleeper.h"

namespace mmi {
namespace {

TEST(RealSleeperTest, ReturnsFalseAtOnceWhenTheStopWasRequestedBefore) {
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(RealSleeper::Instance().SleepFor(std::chrono::hours(1), stop.get_token()));
}

TEST(RealSleeperTest, AStopRequestWakesASleepingThread) {
  std::stop_source stop;
  bool slept_through = true;
  std::thread sleeper([&] {
    slept_through = RealSleeper::Instance().SleepFor(std::chrono::hours(1), stop.get_token());
  });
  stop.request_stop();
  sleeper.join();  // an hour unless the request woke it (the test would time out)
  EXPECT_FALSE(slept_through);
}

TEST(RealSleeperTest, ReturnsTrueWhenTheWaitEndsWithoutAStop) {
  std::stop_source stop;
  EXPECT_TRUE(RealSleeper::Instance().SleepFor(std::chrono::microseconds(100), stop.get_token()));
  EXPECT_TRUE(RealSleeper::Instance().SleepFor(std::chrono::nanoseconds(0), stop.get_token()));
  RealSleeper::Instance().SleepFor(std::chrono::microseconds(100));  // uninterruptible
}

TEST(FakeSleeperTest, RecordsEveryWaitAndAdvancesTheClockWithoutBlocking) {
  testing::FakeClock clock;
  testing::FakeSleeper sleeper(&clock);
  const auto start = clock.MonotonicNow();
  sleeper.SleepFor(std::chrono::hours(1));
  EXPECT_TRUE(sleeper.SleepFor(std::chrono::minutes(1), std::stop_token()));
  sleeper.SleepFor(std::chrono::seconds(0));  // not recorded
  EXPECT_EQ(sleeper.Sleeps(), (std::vector<std::chrono::nanoseconds>{std::chrono::hours(1),
                                                                     std::chrono::minutes(1)}));
  EXPECT_EQ(sleeper.Total(), std::chrono::minutes(61));
  EXPECT_EQ(clock.MonotonicNow() - start, std::chrono::minutes(61));
}

TEST(FakeSleeperTest, AStoppedWaitReturnsFalseAndLeavesTheClockAlone) {
  testing::FakeClock clock;
  testing::FakeSleeper sleeper(&clock);
  std::stop_source stop;
  stop.request_stop();
  const auto start = clock.MonotonicNow();
  EXPECT_FALSE(sleeper.SleepFor(std::chrono::hours(1), stop.get_token()));
  EXPECT_TRUE(sleeper.Sleeps().empty());
  EXPECT_EQ(clock.MonotonicNow(), start);
}

}  // namespace
}  // namespace mmi

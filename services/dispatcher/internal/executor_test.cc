#include "services/dispatcher/internal/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "libs/common/testing/fake_clock.h"

namespace mmi::dispatcher::internal {
namespace {

TEST(ExecutorTest, ManualModeRunsTasksAndDueTimersInOrder) {
  mmi::testing::FakeClock clock;
  Executor ex(clock, "test", 0);
  std::vector<int> order;
  ex.Post([&] { order.push_back(1); });
  ex.PostAfter(std::chrono::seconds(10), [&] { order.push_back(3); });
  ex.Post([&] {
    order.push_back(2);
    EXPECT_TRUE(ex.IsCurrentThread());
  });
  EXPECT_EQ(ex.RunUntilIdleForTest(), 2);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(ex.Pending(), 1U);
  EXPECT_FALSE(ex.IsCurrentThread());
  clock.Advance(std::chrono::seconds(10));
  EXPECT_EQ(ex.RunUntilIdleForTest(), 1);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(ExecutorTest, ThreadedModeRunsEverythingQueuedBeforeStopping) {
  Executor ex(RealClock::Instance(), "test", 2);
  ex.Start();
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) {
    ex.Post([&] { ++ran; });
  }
  ex.Stop();
  EXPECT_EQ(ran.load(), 100);
  ex.Post([&] { ++ran; });  // after Stop: dropped
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace mmi::dispatcher::internal

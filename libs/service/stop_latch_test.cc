#include "libs/service/stop_latch.h"

#include <gtest/gtest.h>

#include <thread>

namespace mmi::service {
namespace {

TEST(StopLatchTest, KeepsTheHighestExitCodeRequested) {
  StopLatch latch;
  EXPECT_FALSE(latch.requested());
  EXPECT_FALSE(latch.WaitFor(std::chrono::milliseconds(0)));
  latch.Request(1);  // lost leadership
  latch.Request(0);  // then SIGTERM
  EXPECT_TRUE(latch.requested());
  EXPECT_EQ(latch.Wait(), 1);
  EXPECT_TRUE(latch.WaitFor(std::chrono::milliseconds(0)));
}

TEST(StopLatchTest, WaitReturnsOnARequestFromAnotherThread) {
  StopLatch latch;
  std::thread requester([&] { latch.Request(0); });
  EXPECT_EQ(latch.Wait(), 0);
  requester.join();
  EXPECT_EQ(latch.exit_code(), 0);
}

}  // namespace
}  // namespace mmi::service

#include "libs/transport/internal/serial_executor.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace mmi::transport::internal {
namespace {

TEST(SerialExecutorTest, RunsTasksInPostOrderOffTheCallingThread) {
  SerialExecutor executor("test-exec");
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  for (int i = 0; i < 100; ++i) {
    executor.Post([&order, &threads, i] {
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
    });
  }
  executor.Stop();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(order[i], i);
    EXPECT_NE(threads[i], std::this_thread::get_id());
  }
}

TEST(SerialExecutorTest, RunsTasksPostedAfterStopInline) {
  SerialExecutor executor("test-exec");
  executor.Stop();
  executor.Stop();  // idempotent
  bool ran = false;
  executor.Post([&ran] { ran = true; });
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace mmi::transport::internal

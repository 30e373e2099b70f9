#include "libs/common/loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "libs/common/testing/fake_clock.h"

namespace mmi {
namespace {

using std::chrono::seconds;

// Long enough never to be reached by a correct implementation: these waits end on a condition.
constexpr absl::Duration kDeadline = absl::Seconds(30);

TEST(LoopTest, RunsPostedTasksAndDueTimersInOrderOnTheTestThread) {
  testing::FakeClock clock;
  Loop loop(clock, "test");
  std::vector<int> order;
  loop.Post([&] { order.push_back(1); });
  loop.PostAfter(seconds(10), [&] { order.push_back(3); });
  loop.Post([&] {
    order.push_back(2);
    EXPECT_TRUE(loop.IsLoopThread());
  });
  EXPECT_EQ(loop.RunUntilIdleForTest(), 2);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(loop.Pending(), 1U);
  EXPECT_FALSE(loop.IsLoopThread());
  clock.Advance(seconds(10));
  EXPECT_EQ(loop.RunUntilIdleForTest(), 1);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(LoopTest, FiresTimersInDueOrderAndEqualDueTimesInTheOrderTheyWereSet) {
  testing::FakeClock clock;
  Loop loop(clock, "test");
  std::vector<int> order;
  loop.PostAfter(seconds(5), [&] { order.push_back(3); });
  loop.PostAfter(seconds(1), [&] { order.push_back(1); });
  loop.PostAfter(seconds(1), [&] { order.push_back(2); });
  clock.Advance(seconds(4));
  loop.RunUntilIdleForTest();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  clock.Advance(seconds(1));
  loop.RunUntilIdleForTest();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(LoopTest, RunUntilIdleAlsoRunsWhatTheTasksPost) {
  testing::FakeClock clock;
  Loop loop(clock, "test");
  int ran = 0;
  loop.Post([&] {
    ++ran;
    loop.Post([&] { ++ran; });
  });
  EXPECT_EQ(loop.RunUntilIdleForTest(), 2);
  EXPECT_EQ(ran, 2);
}

TEST(LoopTest, RunQueuedLeavesWhatTheTasksPostForTheNextCall) {
  testing::FakeClock clock;
  Loop loop(clock, "test");
  std::vector<int> order;
  loop.Post([&] {
    order.push_back(1);
    loop.Post([&] { order.push_back(3); });
  });
  loop.Post([&] { order.push_back(2); });
  EXPECT_EQ(loop.RunQueuedForTest(), 2);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(loop.RunQueuedForTest(), 1);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(loop.RunQueuedForTest(), 0);
}

TEST(LoopTest, RunsTasksInPostOrderOnItsOwnThread) {
  Loop loop(RealClock::Instance(), "test-loop");
  loop.Start();
  std::vector<int> order;
  std::vector<bool> on_loop;
  for (int i = 0; i < 100; ++i) {
    loop.Post([&, i] {
      order.push_back(i);
      on_loop.push_back(loop.IsLoopThread());
    });
  }
  EXPECT_FALSE(loop.IsLoopThread());
  loop.Stop();
  ASSERT_EQ(order.size(), 100U);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(order[i], i);
    EXPECT_TRUE(on_loop[i]);
  }
}

TEST(LoopTest, AStartedLoopFiresATimerSetWhileItWaits) {
  Loop loop(RealClock::Instance(), "test-loop");
  loop.Start();
  absl::Notification fired;
  loop.PostAfter(std::chrono::hours(1), [] {});  // the loop now waits for this one
  loop.PostAfter(std::chrono::milliseconds(1), [&] { fired.Notify(); });
  EXPECT_TRUE(fired.WaitForNotificationWithTimeout(kDeadline));
  loop.Stop();
}

TEST(LoopTest, StopRunsWhatIsQueuedAndWhatItPostsThenDropsLaterPosts) {
  Loop loop(RealClock::Instance(), "test-loop");
  absl::Notification release;
  std::atomic<int> ran{0};
  loop.Post([&] { release.WaitForNotification(); });
  loop.Post([&] {
    ++ran;
    loop.Post([&] { ++ran; });  // posted while Stop() drains: still runs
  });
  loop.Start();
  std::thread stopper([&] { loop.Stop(); });
  release.Notify();
  stopper.join();
  EXPECT_EQ(ran.load(), 2);
  loop.Post([&] { ++ran; });  // after Stop: dropped
  EXPECT_EQ(ran.load(), 2);
  EXPECT_EQ(loop.Pending(), 0U);
}

TEST(LoopTest, StopDestroysTimersNotYetDueAndLaterTimersUnrun) {
  testing::FakeClock clock;
  Loop loop(clock, "test", AfterStop::kRunOnCaller);
  bool ran = false;
  loop.PostAfter(seconds(1), [&] { ran = true; });
  loop.Stop();
  loop.PostAfter(seconds(0), [&] { ran = true; });
  clock.Advance(seconds(1));
  EXPECT_EQ(loop.RunUntilIdleForTest(), 0);
  EXPECT_FALSE(ran);
}

TEST(LoopTest, StopOfALoopNeverStartedDropsItsQueuedTasks) {
  testing::FakeClock clock;
  Loop loop(clock, "test");
  bool ran = false;
  loop.Post([&] { ran = true; });
  loop.Stop();
  loop.Stop();  // idempotent
  EXPECT_FALSE(ran);
  EXPECT_EQ(loop.Pending(), 0U);
}

TEST(LoopTest, WithRunOnCallerTasksQueuedOrPostedAfterStopRunOnTheCaller) {
  testing::FakeClock clock;
  Loop loop(clock, "test", AfterStop::kRunOnCaller);
  std::vector<std::thread::id> ran_on;
  loop.Post([&] { ran_on.push_back(std::this_thread::get_id()); });
  loop.Stop();
  loop.Post([&] { ran_on.push_back(std::this_thread::get_id()); });
  EXPECT_EQ(ran_on,
            (std::vector<std::thread::id>{std::this_thread::get_id(), std::this_thread::get_id()}));
}

TEST(WorkerPoolTest, RunsEverythingQueuedBeforeStoppingAndDropsLaterPosts) {
  WorkerPool pool(RealClock::Instance(), "test", 2);
  pool.Start();
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) {
    pool.Post([&] { ++ran; });
  }
  pool.Stop();
  EXPECT_EQ(ran.load(), 100);
  pool.Post([&] { ++ran; });  // after Stop: dropped
  EXPECT_EQ(ran.load(), 100);
}

TEST(WorkerPoolTest, WithRunOnCallerRunsEverythingSubmittedBeforeAndAfterStop) {
  std::atomic<int> ran{0};
  WorkerPool pool(RealClock::Instance(), "test", 3, AfterStop::kRunOnCaller);
  pool.Start();
  for (int i = 0; i < 100; ++i) {
    pool.Post([&ran] { ++ran; });
  }
  pool.Stop();
  EXPECT_EQ(ran.load(), 100);
  pool.Post([&ran] { ++ran; });  // after Stop: runs on the caller
  EXPECT_EQ(ran.load(), 101);
}

TEST(WorkerPoolTest, RunsTasksConcurrentlyOnItsThreads) {
  WorkerPool pool(RealClock::Instance(), "test", 2);
  pool.Start();
  absl::Notification first_running;
  absl::Notification second_running;
  std::atomic<bool> both{false};
  std::atomic<int> on_pool{0};
  pool.Post([&] {
    on_pool += pool.IsWorkerThread() ? 1 : 0;
    first_running.Notify();
    both = second_running.WaitForNotificationWithTimeout(kDeadline);
  });
  pool.Post([&] {
    on_pool += pool.IsWorkerThread() ? 1 : 0;
    second_running.Notify();
    first_running.WaitForNotificationWithTimeout(kDeadline);
  });
  pool.Stop();
  EXPECT_TRUE(both.load()) << "the second task ran while the first one waited for it";
  EXPECT_EQ(on_pool.load(), 2);
  EXPECT_FALSE(pool.IsWorkerThread());
}

TEST(WorkerPoolTest, APoolNotStartedRunsDelayedWorkOnTheTestThreadOnceTheClockPassedIt) {
  testing::FakeClock clock;
  WorkerPool pool(clock, "test", 4);
  int ran = 0;
  pool.PostAfter(seconds(30), [&] { ++ran; });
  EXPECT_EQ(pool.RunUntilIdleForTest(), 0);
  EXPECT_EQ(pool.Pending(), 1U);
  clock.Advance(seconds(30));
  EXPECT_EQ(pool.RunUntilIdleForTest(), 1);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(pool.Pending(), 0U);
}

}  // namespace
}  // namespace mmi

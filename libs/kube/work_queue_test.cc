#include "libs/kube/work_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace mmi::kube {
namespace {

using AddResult = WorkQueue::AddResult;

TEST(WorkQueueTest, HandsOutKeysInTheOrderTheyWereFirstAdded) {
  WorkQueue queue(10);
  EXPECT_EQ(queue.Add("a"), AddResult::kAdded);
  EXPECT_EQ(queue.Add("b"), AddResult::kAdded);
  EXPECT_EQ(queue.Add("a"), AddResult::kAlreadyQueued);
  EXPECT_EQ(queue.Len(), 2U);
  EXPECT_EQ(queue.Get(), "a");
  EXPECT_EQ(queue.Get(), "b");
  EXPECT_EQ(queue.Get(), std::nullopt);
}

TEST(WorkQueueTest, AKeyAddedWhileBeingProcessedIsQueuedAgainByDone) {
  WorkQueue queue(10);
  queue.Add("a");
  ASSERT_EQ(queue.Get(), "a");
  EXPECT_EQ(queue.Add("a"), AddResult::kAdded);
  EXPECT_EQ(queue.Add("a"), AddResult::kAlreadyQueued);
  EXPECT_EQ(queue.Get(), std::nullopt) << "never handed out twice at once";
  EXPECT_EQ(queue.Len(), 1U);
  queue.Done("a");
  EXPECT_EQ(queue.Get(), "a");
  queue.Done("a");
  EXPECT_EQ(queue.Get(), std::nullopt) << "not added again: not queued again";
  EXPECT_EQ(queue.Len(), 0U);
}

TEST(WorkQueueTest, UrgentKeysAreHandedOutFirstAndMoveAheadOfTheirOwnResyncEntry) {
  WorkQueue queue(10);
  queue.Add("resync-1");
  queue.Add("changed");  // queued by a resync first
  queue.Add("resync-2");
  EXPECT_EQ(queue.Add("new", /*urgent=*/true), AddResult::kAdded);
  EXPECT_EQ(queue.Add("changed", /*urgent=*/true), AddResult::kAlreadyQueued);
  EXPECT_EQ(queue.Add("changed", /*urgent=*/true), AddResult::kAlreadyQueued);
  EXPECT_EQ(queue.Len(), 4U);
  EXPECT_EQ(queue.Get(), "new");
  EXPECT_EQ(queue.Get(), "changed");
  EXPECT_EQ(queue.Get(), "resync-1");
  EXPECT_EQ(queue.Get(), "resync-2") << "changed's resync entry is skipped: handed out already";
  EXPECT_EQ(queue.Get(), std::nullopt);
  EXPECT_EQ(queue.Len(), 0U);
  queue.Done("changed");
  EXPECT_EQ(queue.Get(), std::nullopt) << "not added again: not queued again";
}

TEST(WorkQueueTest, AnUrgentKeyAddedWhileBeingProcessedIsQueuedAgainAheadByDone) {
  WorkQueue queue(10);
  queue.Add("a");
  queue.Add("b");
  ASSERT_EQ(queue.Get(), "a");
  EXPECT_EQ(queue.Add("a", /*urgent=*/true), AddResult::kAdded);
  EXPECT_EQ(queue.Get(), "b");
  EXPECT_EQ(queue.Add("b"), AddResult::kAdded);
  queue.Done("b");
  queue.Done("a");
  EXPECT_EQ(queue.Get(), "a") << "urgent, though queued again after b";
  EXPECT_EQ(queue.Get(), "b");
  EXPECT_EQ(queue.Get(), std::nullopt);
}

TEST(WorkQueueTest, AStaleResyncEntryDoesNotHideTheKeyWhenItIsAddedAgain) {
  WorkQueue queue(10);
  queue.Add("k");
  queue.Add("k", /*urgent=*/true);  // moved ahead; its first entry stays behind, stale
  ASSERT_EQ(queue.Get(), "k");
  queue.Done("k");
  queue.Add("x");
  EXPECT_EQ(queue.Add("k"), AddResult::kAdded);
  EXPECT_EQ(queue.Len(), 2U);
  EXPECT_EQ(queue.Get(), "k");  // from its older entry: still handed out once
  EXPECT_EQ(queue.Get(), "x");
  EXPECT_EQ(queue.Get(), std::nullopt) << "k's newer entry is stale now";
  queue.Done("k");
  queue.Done("x");
  EXPECT_EQ(queue.Len(), 0U);
  EXPECT_FALSE(queue.TakeOverflow());
}

TEST(WorkQueueTest, DoneForAKeyNotBeingProcessedChangesNothing) {
  WorkQueue queue(10);
  queue.Add("a");
  queue.Done("a");
  queue.Done("never-added");
  EXPECT_EQ(queue.Get(), "a");
  EXPECT_EQ(queue.Get(), std::nullopt);
}

TEST(WorkQueueTest, AFullQueueDropsKeysAndAsksForOneResyncOnceDrained) {
  WorkQueue queue(2);
  queue.Add("a");
  queue.Add("b");
  EXPECT_EQ(queue.Add("c"), AddResult::kOverflowed);
  EXPECT_EQ(queue.Add("d"), AddResult::kDropped);
  EXPECT_EQ(queue.Add("a"), AddResult::kAlreadyQueued) << "a waiting key is not a drop";
  EXPECT_FALSE(queue.TakeOverflow()) << "keys still queued";
  queue.Get();
  queue.Get();
  EXPECT_TRUE(queue.TakeOverflow());
  EXPECT_FALSE(queue.TakeOverflow()) << "once";
  EXPECT_EQ(queue.Add("c"), AddResult::kAdded);
}

TEST(WorkQueueTest, KeysAddedAgainWhileProcessedCountAgainstTheCapacity) {
  WorkQueue queue(1);
  queue.Add("a");
  ASSERT_EQ(queue.Get(), "a");
  EXPECT_EQ(queue.Add("a"), AddResult::kAdded);
  EXPECT_EQ(queue.Add("b"), AddResult::kOverflowed);
}

TEST(WorkQueueTest, WaitReturnsOnceAKeyIsQueuedOrTheQueueShutsDown) {
  WorkQueue queue(10);
  queue.Wait(std::chrono::milliseconds(0));  // nothing queued: returns at the timeout
  std::thread producer([&] { queue.Add("a"); });
  queue.Wait(std::chrono::hours(1));  // an hour unless the Add woke it (the test would time out)
  producer.join();
  EXPECT_EQ(queue.Get(), "a");

  EXPECT_FALSE(queue.ShuttingDown());
  std::thread stopper([&] { queue.ShutDown(); });
  queue.Wait(std::chrono::hours(1));
  stopper.join();
  EXPECT_TRUE(queue.ShuttingDown());
}

TEST(WorkQueueTest, WaitReturnsWhenAnOverflowAwaitsItsResync) {
  WorkQueue queue(1);
  queue.Add("a");
  queue.Add("b");
  queue.Get();
  queue.Wait(std::chrono::hours(1));
  EXPECT_TRUE(queue.TakeOverflow());
}

}  // namespace
}  // namespace mmi::kube

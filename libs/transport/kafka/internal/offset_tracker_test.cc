#include "libs/transport/kafka/internal/offset_tracker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mmi::transport::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST(OffsetTrackerTest, CommitsOnlyPastTheOldestUnackedOffset) {
  OffsetTracker tracker;
  tracker.Assign(0);
  auto a = tracker.Delivered(0, 10);
  auto b = tracker.Delivered(0, 11);
  auto c = tracker.Delivered(0, 12);
  tracker.Ack(a);
  tracker.Ack(c);
  EXPECT_THAT(tracker.TakeCommittable(), ElementsAre(Pair(0, 11)));
  EXPECT_THAT(tracker.TakeCommittable(), IsEmpty());
  EXPECT_EQ(tracker.pending(), 1);
  tracker.Ack(b);
  EXPECT_THAT(tracker.TakeCommittable(), ElementsAre(Pair(0, 13)));
  EXPECT_EQ(tracker.pending(), 0);
}

TEST(OffsetTrackerTest, TracksPartitionsIndependently) {
  OffsetTracker tracker;
  tracker.Assign(0);
  tracker.Assign(1);
  auto p0 = tracker.Delivered(0, 5);
  tracker.Delivered(1, 7);
  tracker.Ack(p0);
  EXPECT_THAT(tracker.TakeCommittable(), ElementsAre(Pair(0, 6)));
}

TEST(OffsetTrackerTest, IgnoresAcksFromBeforeARevoke) {
  OffsetTracker tracker;
  tracker.Assign(0);
  auto old = tracker.Delivered(0, 3);
  tracker.Revoke(0);
  tracker.Assign(0);
  tracker.Ack(old);
  EXPECT_THAT(tracker.TakeCommittable(), IsEmpty());
  auto fresh = tracker.Delivered(0, 3);
  tracker.Ack(fresh);
  EXPECT_THAT(tracker.TakeCommittable(), ElementsAre(Pair(0, 4)));
}

TEST(OffsetTrackerTest, IgnoresAcksAfterClose) {
  OffsetTracker tracker;
  tracker.Assign(0);
  auto a = tracker.Delivered(0, 1);
  tracker.Close();
  tracker.Ack(a);
  EXPECT_THAT(tracker.TakeCommittable(), IsEmpty());
}

TEST(OffsetTrackerTest, TracksMessagesOfPartitionsItWasNotToldAbout) {
  OffsetTracker tracker;
  auto a = tracker.Delivered(4, 0);
  tracker.Ack(a);
  EXPECT_THAT(tracker.TakeCommittable(), ElementsAre(Pair(4, 1)));
}

}  // namespace
}  // namespace mmi::transport::internal

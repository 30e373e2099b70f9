#include "libs/cloudevents/sequence_id.h"

#include <chrono>
#include <string>

#include "gtest/gtest.h"
#include "libs/cloudevents/event.h"
#include "libs/common/testing/fake_clock.h"

namespace mmi::cloudevents {
namespace {

std::string TimeOf(const SequenceId& id) {
  return FormatTimestamp(std::chrono::time_point_cast<std::chrono::nanoseconds>(id.Time()));
}

TEST(SequenceIdTest, DecodesTheSpecExamples) {
  // §6.2: 2000808179721572352 = 2025-12-16T06:00:17.921Z, node 1, step 0.
  auto id = SequenceId::Parse("2000808179721572352");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(TimeOf(*id), "2025-12-16T06:00:17.921Z");
  EXPECT_EQ(id->node, 1);
  EXPECT_EQ(id->step, 0);
  EXPECT_EQ(id->ToString(), "2000808179721572352");
  // cloudevents.status.maestro.json and §2.7.
  EXPECT_EQ(TimeOf(*SequenceId::Parse("2000808179729960960")), "2025-12-16T06:00:17.923Z");
  EXPECT_EQ(TimeOf(*SequenceId::Parse("2061387297575669760")), "2026-06-01T10:00:05.123Z");
}

TEST(SequenceIdTest, RejectsMalformedIds) {
  for (const char* text : {"", "-1", "+1", "1.0", "abc", " 1", "9223372036854775808", "0x10"}) {
    EXPECT_EQ(SequenceId::Parse(text).status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_EQ(SequenceId::FromParts(0, 1024, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SequenceId::FromParts(0, 1, 4096).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SequenceId::FromParts(-1, 1, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SequenceIdTest, LaterTimeWinsThenHigherStep) {
  const auto a = *SequenceId::FromParts(100, 1, 5);
  const auto b = *SequenceId::FromParts(101, 1, 0);
  const auto c = *SequenceId::FromParts(101, 1, 1);
  EXPECT_EQ(*CompareSequenceIds(a, b), std::strong_ordering::less);
  EXPECT_EQ(*CompareSequenceIds(c, b), std::strong_ordering::greater);
  EXPECT_EQ(*CompareSequenceIds(c, c), std::strong_ordering::equal);
  const auto other_node = *SequenceId::FromParts(200, 2, 0);
  EXPECT_EQ(CompareSequenceIds(a, other_node).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(SequenceIdTest, IsNewerFollowsMaestrosRule) {
  EXPECT_TRUE(*IsNewerSequenceId("2000808179721572352", ""));
  EXPECT_TRUE(*IsNewerSequenceId("2000808179729960960", "2000808179721572352"));
  EXPECT_FALSE(*IsNewerSequenceId("2000808179721572352", "2000808179729960960"));
  EXPECT_FALSE(*IsNewerSequenceId("2000808179721572352", "2000808179721572352"));
  EXPECT_EQ(IsNewerSequenceId("x", "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(IsNewerSequenceId("1", "x").status().code(), absl::StatusCode::kInvalidArgument);
  const std::string node2 = SequenceId::FromParts(1, 2, 0)->ToString();
  const std::string node1 = SequenceId::FromParts(1, 1, 0)->ToString();
  EXPECT_EQ(IsNewerSequenceId(node2, node1).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(SequenceIdGeneratorTest, GeneratesIncreasingIdsFromTheClock) {
  // 2025-12-16T06:00:17.921Z
  mmi::testing::FakeClock clock(std::chrono::system_clock::time_point(
      std::chrono::milliseconds(kSnowflakeEpochUnixMs + (2000808179721572352 >> 22))));
  SequenceIdGenerator generator(clock);
  const SequenceId first = generator.Next();
  EXPECT_EQ(first.ToString(), "2000808179721572352");
  const SequenceId second = generator.Next();
  EXPECT_EQ(second.step, 1);
  EXPECT_TRUE(*IsNewerSequenceId(second.ToString(), first.ToString()));
  clock.Advance(std::chrono::milliseconds(2));
  const SequenceId third = generator.Next();
  EXPECT_EQ(third.millis, first.millis + 2);
  EXPECT_EQ(third.step, 0);
}

TEST(SequenceIdGeneratorTest, NeverGoesBackwardsOrBlocks) {
  mmi::testing::FakeClock clock;
  SequenceIdGenerator generator(clock, 7);
  SequenceId previous = generator.Next();
  // More than 4096 IDs within one (frozen) millisecond, then a clock step back.
  for (int i = 0; i < 10000; ++i) {
    if (i == 5000) {
      clock.Advance(-std::chrono::seconds(1));
    }
    const SequenceId next = generator.Next();
    ASSERT_EQ(next.node, 7);
    ASSERT_EQ(*CompareSequenceIds(next, previous), std::strong_ordering::greater) << i;
    previous = next;
  }
}

}  // namespace
}  // namespace mmi::cloudevents

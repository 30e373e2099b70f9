#include "libs/common/backoff.h"

#include <gtest/gtest.h>

namespace mmi {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, GrowsGeometricallyUpToTheCap) {
  Backoff b(
      {.initial = milliseconds(100), .max = milliseconds(1000), .multiplier = 2.0, .jitter = 0},
      /*seed=*/1);
  EXPECT_EQ(b.Next(), milliseconds(100));
  EXPECT_EQ(b.Next(), milliseconds(200));
  EXPECT_EQ(b.Next(), milliseconds(400));
  EXPECT_EQ(b.Next(), milliseconds(800));
  EXPECT_EQ(b.Next(), milliseconds(1000));
  EXPECT_EQ(b.Next(), milliseconds(1000));
  EXPECT_EQ(b.attempts(), 6);
}

TEST(BackoffTest, JitterStaysWithinItsBand) {
  Backoff b(
      {.initial = milliseconds(1000), .max = milliseconds(1000), .multiplier = 1.0, .jitter = 0.2},
      /*seed=*/42);
  for (int i = 0; i < 1000; ++i) {
    const auto d = b.Next();
    EXPECT_GE(d, milliseconds(800));
    EXPECT_LE(d, milliseconds(1200));
  }
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff b({.initial = milliseconds(10), .max = milliseconds(1000), .multiplier = 10, .jitter = 0},
            1);
  b.Next();
  b.Next();
  b.Reset();
  EXPECT_EQ(b.Next(), milliseconds(10));
}

}  // namespace
}  // namespace mmi

namespace mmi {
namespace {

TEST(BackoffDelayTest, GrowsPerRetryUpToTheCapWithoutJitter) {
  const BackoffSettings s{std::chrono::milliseconds(200), std::chrono::milliseconds(10'000), 2.0,
                          0.5};
  EXPECT_EQ(BackoffDelay(s, 0), std::chrono::milliseconds(200));
  EXPECT_EQ(BackoffDelay(s, 1), std::chrono::milliseconds(400));
  EXPECT_EQ(BackoffDelay(s, 5), std::chrono::milliseconds(6'400));
  EXPECT_EQ(BackoffDelay(s, 6), std::chrono::milliseconds(10'000));
  EXPECT_EQ(BackoffDelay(s, 1'000), std::chrono::milliseconds(10'000));
  EXPECT_EQ(BackoffDelay(s, -3), std::chrono::milliseconds(200));
}

}  // namespace
}  // namespace mmi

#include "libs/common/clock.h"

#include <gtest/gtest.h>

#include "libs/common/testing/fake_clock.h"

namespace mmi {
namespace {

TEST(FakeClockTest, MovesOnlyWhenAdvanced) {
  testing::FakeClock clock;
  const auto wall = clock.Now();
  const auto mono = clock.MonotonicNow();
  EXPECT_EQ(clock.Now(), wall);
  clock.Advance(std::chrono::seconds(5));
  EXPECT_EQ(clock.Now() - wall, std::chrono::seconds(5));
  EXPECT_EQ(clock.MonotonicNow() - mono, std::chrono::seconds(5));
}

TEST(RealClockTest, MonotonicTimeNeverGoesBack) {
  const Clock& clock = RealClock::Instance();
  const auto a = clock.MonotonicNow();
  const auto b = clock.MonotonicNow();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace mmi

// A Clock that only moves when a test says so.
#pragma once

#include <atomic>
#include <chrono>

#include "libs/common/clock.h"

namespace mmi::testing {

// Thread-safe: readers may run on other threads while the test advances time.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::chrono::system_clock::time_point start =
                         std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000)))
      : wall_(start.time_since_epoch().count()) {}

  std::chrono::system_clock::time_point Now() const override {
    return std::chrono::system_clock::time_point(std::chrono::system_clock::duration(wall_.load()));
  }
  std::chrono::steady_clock::time_point MonotonicNow() const override {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(mono_.load()));
  }
  void Advance(std::chrono::nanoseconds d) {
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d).count();
    mono_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d).count();
  }

 private:
  std::atomic<std::chrono::system_clock::rep> wall_;
  std::atomic<std::chrono::steady_clock::rep> mono_{0};
};

}  // namespace mmi::testing

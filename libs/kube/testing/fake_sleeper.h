// A Sleeper that never blocks: it records each requested wait and advances a FakeClock by it.
#pragma once

#include <chrono>
#include <mutex>
#include <vector>

#include "libs/common/testing/fake_clock.h"
#include "libs/kube/sleeper.h"

namespace mmi::kube::testing {

// Thread-safe.
class FakeSleeper final : public Sleeper {
 public:
  // `clock` (nullable) is advanced by every sleep.
  explicit FakeSleeper(mmi::testing::FakeClock* clock = nullptr) : clock_(clock) {}

  void SleepFor(std::chrono::nanoseconds duration) override {
    if (duration.count() <= 0) {
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    sleeps_.push_back(duration);
    if (clock_ != nullptr) {
      clock_->Advance(duration);
    }
  }

  std::vector<std::chrono::nanoseconds> Sleeps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sleeps_;
  }
  std::chrono::nanoseconds Total() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::chrono::nanoseconds sum{0};
    for (const auto d : sleeps_) {
      sum += d;
    }
    return sum;
  }

 private:
  mmi::testing::FakeClock* const clock_;
  mutable std::mutex mu_;
  std::vector<std::chrono::nanoseconds> sleeps_;
};

}  // namespace mmi::kube::testing

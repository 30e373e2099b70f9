// A Sleeper that never blocks: it records each requested wait and advances a FakeClock by it.
#pragma once

#include <chrono>
#include <stop_token>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/sleeper.h"
#include "libs/common/testing/fake_clock.h"

namespace mmi::testing {

// Thread-safe.
class FakeSleeper final : public Sleeper {
 public:
  // `clock` (nullable) is advanced by every sleep.
  explicit FakeSleeper(FakeClock* clock = nullptr) : clock_(clock) {}

  using Sleeper::SleepFor;
  // A sleep whose stop was requested returns false at once, unrecorded.
  bool SleepFor(std::chrono::nanoseconds duration, const std::stop_token& stop) override {
    if (stop.stop_requested()) {
      return false;
    }
    if (duration.count() <= 0) {
      return true;
    }
    absl::MutexLock lock(&mu_);
    sleeps_.push_back(duration);
    if (clock_ != nullptr) {
      clock_->Advance(duration);
    }
    return true;
  }

  std::vector<std::chrono::nanoseconds> Sleeps() const {
    absl::MutexLock lock(&mu_);
    return sleeps_;
  }
  std::chrono::nanoseconds Total() const {
    absl::MutexLock lock(&mu_);
    std::chrono::nanoseconds sum{0};
    for (const auto d : sleeps_) {
      sum += d;
    }
    return sum;
  }

 private:
  FakeClock* const clock_;
  mutable absl::Mutex mu_;
  std::vector<std::chrono::nanoseconds> sleeps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::testing

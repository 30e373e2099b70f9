// Blocking waits as a dependency, next to mmi::Clock: the HTTP client waits for rate-limit tokens
// and Retry-After through a Sleeper, so unit tests run those paths instantly with a fake one
// (libs/kube/testing/fake_sleeper.h) that advances a FakeClock.
#pragma once

#include <chrono>

namespace mmi::kube {

// Thread-safe.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  // Blocks the calling thread for `duration` (returns at once when it is <= 0).
  virtual void SleepFor(std::chrono::nanoseconds duration) = 0;
};

// Sleeps for real.
class RealSleeper final : public Sleeper {
 public:
  void SleepFor(std::chrono::nanoseconds duration) override;
  // A process-wide instance for *_app.cc wiring.
  static RealSleeper& Instance();
};

}  // namespace mmi::kube

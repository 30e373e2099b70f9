// Blocking waits as a dependency, next to mmi::Clock. A Sleeper waits for a duration, or less
// when a std::stop_token is requested meanwhile: the one interruptible sleep behind retry and
// backoff waits (the Kubernetes client's rate limits and Retry-After, the informer's and the
// leader elector's backoff, the deletion listener's reconnects). Tests pass a FakeSleeper
// (libs/common/testing/fake_sleeper.h) that returns at once and advances a FakeClock.
#pragma once

#include <chrono>
#include <stop_token>

namespace mmi {

// Thread-safe.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  // Blocks the calling thread for `duration` or until `stop` is requested, whichever comes
  // first. Returns false when `stop` was requested (before or during the wait), true otherwise.
  // Returns at once when `duration` <= 0.
  virtual bool SleepFor(std::chrono::nanoseconds duration, const std::stop_token& stop) = 0;
  // Blocks for `duration`; nothing interrupts it.
  void SleepFor(std::chrono::nanoseconds duration) { SleepFor(duration, std::stop_token()); }
};

// Sleeps for real; a stop request wakes it at once.
class RealSleeper final : public Sleeper {
 public:
  using Sleeper::SleepFor;
  bool SleepFor(std::chrono::nanoseconds duration, const std::stop_token& stop) override;
  // A process-wide instance for *_app.cc wiring, and for classes that wait in real time.
  static RealSleeper& Instance();
};

}  // namespace mmi

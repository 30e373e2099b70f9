// Time as a dependency. Production code takes a `Clock&`; tests drive a FakeClock
// (libs/common/testing/fake_clock.h).
#pragma once

#include <chrono>

namespace mmi {

// Thread-safe. Both readings are cheap; neither blocks.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, for timestamps that leave the process (events, logs, status fields).
  virtual std::chrono::system_clock::time_point Now() const = 0;
  // Monotonic time, for durations, deadlines and rate limits.
  virtual std::chrono::steady_clock::time_point MonotonicNow() const = 0;
};

// The process clock.
class RealClock final : public Clock {
 public:
  std::chrono::system_clock::time_point Now() const override {
    return std::chrono::system_clock::now();
  }
  std::chrono::steady_clock::time_point MonotonicNow() const override {
    return std::chrono::steady_clock::now();
  }
  // A process-wide instance for *_app.cc wiring; libraries take a Clock& instead.
  static RealClock& Instance();
};

}  // namespace mmi

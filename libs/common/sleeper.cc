#include "libs/common/sleeper.h"

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace mmi {

bool RealSleeper::SleepFor(std::chrono::nanoseconds duration, const std::stop_token& stop) {
  if (stop.stop_requested()) {
    return false;
  }
  if (duration.count() <= 0) {
    return true;
  }
  if (!stop.stop_possible()) {
    absl::SleepFor(absl::FromChrono(duration));
    return true;
  }
  absl::Mutex mu;
  bool stopped = false;
  // Runs on the thread that requests the stop (or here, when it already was).
  const std::stop_callback wake(stop, [&] {
    absl::MutexLock lock(&mu);
    stopped = true;
  });
  absl::MutexLock lock(&mu);
  mu.AwaitWithTimeout(absl::Condition(&stopped), absl::FromChrono(duration));
  return !stopped;
}

RealSleeper& RealSleeper::Instance() {
  static RealSleeper* const instance = new RealSleeper();
  return *instance;
}

}  // namespace mmi

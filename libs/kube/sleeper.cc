#include "libs/kube/sleeper.h"

#include <thread>

namespace mmi::kube {

void RealSleeper::SleepFor(std::chrono::nanoseconds duration) {
  if (duration.count() > 0) {
    std::this_thread::sleep_for(duration);
  }
}

RealSleeper& RealSleeper::Instance() {
  static RealSleeper* const instance = new RealSleeper();
  return *instance;
}

}  // namespace mmi::kube

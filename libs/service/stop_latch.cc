#include "libs/service/stop_latch.h"

#include <algorithm>

#include "absl/time/time.h"

namespace mmi::service {

void StopLatch::Request(int exit_code) {
  absl::MutexLock lock(&mu_);
  requested_ = true;
  exit_code_ = std::max(exit_code_, exit_code);
}

int StopLatch::Wait() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&requested_));
  return exit_code_;
}

bool StopLatch::WaitFor(std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&requested_), absl::FromChrono(timeout));
}

bool StopLatch::requested() const {
  absl::MutexLock lock(&mu_);
  return requested_;
}

int StopLatch::exit_code() const {
  absl::MutexLock lock(&mu_);
  return exit_code_;
}

}  // namespace mmi::service

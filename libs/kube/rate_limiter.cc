#include "libs/kube/rate_limiter.h"

#include <algorithm>

namespace mmi::kube {

TokenBucketRateLimiter::TokenBucketRateLimiter(RateLimitSettings settings, const Clock& clock)
    : settings_([&] {
        settings.burst = std::max(settings.burst, 1);
        return settings;
      }()),
      clock_(clock),
      tokens_(settings_.burst),
      last_(clock.MonotonicNow()) {}

std::chrono::nanoseconds TokenBucketRateLimiter::Reserve() {
  if (!Enabled()) {
    return std::chrono::nanoseconds(0);
  }
  absl::MutexLock lock(&mu_);
  const auto now = clock_.MonotonicNow();
  if (now > last_) {
    const double elapsed_s = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min<double>(settings_.burst, tokens_ + elapsed_s * settings_.qps);
    last_ = now;
  }
  tokens_ -= 1.0;
  if (tokens_ >= 0) {
    return std::chrono::nanoseconds(0);
  }
  const double wait_s = -tokens_ / settings_.qps;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(wait_s));
}

}  // namespace mmi::kube

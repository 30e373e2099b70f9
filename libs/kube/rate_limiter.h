// Client-side token bucket in front of every request (client-go's QPS/Burst), so one process
// does not flood the API server; API Priority and Fairness still protects the server side.
#pragma once

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"

namespace mmi::kube {

struct RateLimitSettings {
  // Sustained requests per second; <= 0 disables client-side limiting (rely on APF alone, as
  // controller-runtime >= 0.21 does). client-go's default is 5 QPS / burst 10.
  double qps = 20;
  // Requests allowed at once after an idle period; values < 1 are treated as 1.
  int burst = 30;
};

// Thread-safe. Reservations are granted in call order: each caller takes a token now, possibly
// going into debt, and waits until its token has been earned.
class TokenBucketRateLimiter {
 public:
  TokenBucketRateLimiter(RateLimitSettings settings, const Clock& clock);

  // Takes one token and returns how long the caller must wait before sending (zero when a token
  // was available, always zero when disabled).
  std::chrono::nanoseconds Reserve();
  bool Enabled() const { return settings_.qps > 0; }

 private:
  const RateLimitSettings settings_;
  const Clock& clock_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::kube

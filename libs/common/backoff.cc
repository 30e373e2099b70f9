#include "libs/common/backoff.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace mmi {

Backoff::Backoff(BackoffSettings settings, uint64_t seed)
    : settings_(settings), rng_(seed), current_ms_(static_cast<double>(settings.initial.count())) {
  assert(settings_.multiplier >= 1.0);
  assert(settings_.jitter >= 0.0 && settings_.jitter <= 1.0);
}

std::chrono::milliseconds Backoff::Next() {
  const double base = std::min(current_ms_, static_cast<double>(settings_.max.count()));
  std::uniform_real_distribution<double> dist(1.0 - settings_.jitter, 1.0 + settings_.jitter);
  const double jittered = base * dist(rng_);
  current_ms_ =
      std::min(current_ms_ * settings_.multiplier, static_cast<double>(settings_.max.count()));
  ++attempts_;
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, jittered)));
}

std::chrono::milliseconds BackoffDelay(const BackoffSettings& settings, int retry) {
  const double factor = std::pow(std::max(1.0, settings.multiplier), std::clamp(retry, 0, 30));
  const double ms = std::min(static_cast<double>(settings.max.count()),
                             static_cast<double>(settings.initial.count()) * factor);
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

void Backoff::Reset() {
  current_ms_ = static_cast<double>(settings_.initial.count());
  attempts_ = 0;
}

}  // namespace mmi

// Exponential backoff with full jitter, for reconnects and retries (transports, the Kubernetes
// client, store retries). Pure logic: the caller sleeps or schedules.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace mmi {

struct BackoffSettings {
  std::chrono::milliseconds initial{200};  // first delay before jitter
  std::chrono::milliseconds max{30'000};   // cap for the un-jittered delay
  double multiplier = 2.0;                 // growth per attempt, >= 1
  double jitter = 0.2;                     // +/- fraction applied to each delay, in [0, 1]
};

// The un-jittered delay before retry number `retry` (0 = the first retry): initial *
// multiplier^retry, capped at max. For callers that keep an attempt count per item (queued
// tasks) instead of a Backoff per loop; the jitter setting is ignored.
std::chrono::milliseconds BackoffDelay(const BackoffSettings& settings, int retry);

// Not thread-safe: one instance per retry loop.
class Backoff {
 public:
  explicit Backoff(BackoffSettings settings, uint64_t seed = std::random_device{}());
  // The delay to wait before the next attempt; grows until `max`.
  std::chrono::milliseconds Next();
  // Call after a success so the next failure starts from `initial` again.
  void Reset();
  int attempts() const { return attempts_; }

 private:
  BackoffSettings settings_;
  std::mt19937_64 rng_;
  double current_ms_;
  int attempts_ = 0;
};

}  // namespace mmi

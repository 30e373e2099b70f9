// RetrySchedule: when the GitOpsCluster controller tries a failed work queue key again. Each key
// has its own exponential backoff (settings.retry_backoff), kept until Forget() after a success;
// Schedule() makes the key due after its next delay. The loop takes the due keys and sleeps until
// NextDue().
//
// Thread safety: gitops-loop only. `clock` is borrowed and outlives it.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "libs/common/backoff.h"
#include "libs/common/clock.h"

namespace mmi::dispatcher {

class RetrySchedule {
 public:
  RetrySchedule(const Clock& clock, BackoffSettings backoff) : clock_(clock), backoff_(backoff) {}

  // `key` is due again after its next backoff delay (returned).
  std::chrono::milliseconds Schedule(const std::string& key);
  // `key` succeeded: its next failure starts from the initial delay.
  void Forget(const std::string& key) { backoffs_.erase(key); }
  // Removes and returns the keys due at `now`.
  std::vector<std::string> TakeDue(std::chrono::steady_clock::time_point now);
  // When the next key is due; nullopt when none is scheduled.
  std::optional<std::chrono::steady_clock::time_point> NextDue() const;

 private:
  const Clock& clock_;
  const BackoffSettings backoff_;
  std::map<std::string, std::chrono::steady_clock::time_point> due_;
  std::map<std::string, Backoff> backoffs_;
};

}  // namespace mmi::dispatcher

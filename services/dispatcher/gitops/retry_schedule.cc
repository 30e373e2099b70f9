#include "services/dispatcher/gitops/retry_schedule.h"

#include <algorithm>

namespace mmi::dispatcher {

std::chrono::milliseconds RetrySchedule::Schedule(const std::string& key) {
  auto it = backoffs_.find(key);
  if (it == backoffs_.end()) {
    it = backoffs_.emplace(key, Backoff(backoff_)).first;
  }
  const auto delay = it->second.Next();
  due_[key] = clock_.MonotonicNow() + delay;
  return delay;
}

std::vector<std::string> RetrySchedule::TakeDue(std::chrono::steady_clock::time_point now) {
  std::vector<std::string> keys;
  for (auto it = due_.begin(); it != due_.end();) {
    if (it->second <= now) {
      keys.push_back(it->first);
      it = due_.erase(it);
    } else {
      ++it;
    }
  }
  return keys;
}

std::optional<std::chrono::steady_clock::time_point> RetrySchedule::NextDue() const {
  std::optional<std::chrono::steady_clock::time_point> next;
  for (const auto& [key, due] : due_) {
    next = next.has_value() ? std::min(*next, due) : due;
  }
  return next;
}

}  // namespace mmi::dispatcher

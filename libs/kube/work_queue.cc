#include "libs/kube/work_queue.h"

#include <algorithm>
#include <utility>

#include "absl/time/time.h"

namespace mmi::kube {

WorkQueue::WorkQueue(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

WorkQueue::AddResult WorkQueue::Add(const std::string& key, bool urgent) {
  absl::MutexLock lock(&mu_);
  if (dirty_.contains(key)) {
    if (urgent && urgent_keys_.insert(key).second && !processing_.contains(key)) {
      urgent_.push_back(key);  // moves ahead; its entry in queue_ is skipped later
    }
    return AddResult::kAlreadyQueued;
  }
  if (dirty_.size() >= capacity_) {
    const bool first = !overflowed_;
    overflowed_ = true;
    return first ? AddResult::kOverflowed : AddResult::kDropped;
  }
  dirty_.insert(key);
  if (urgent) {
    urgent_keys_.insert(key);
  }
  if (!processing_.contains(key)) {
    (urgent ? urgent_ : queue_).push_back(key);
    ++queued_;
  }
  return AddResult::kAdded;
}

std::optional<std::string> WorkQueue::PopLocked(std::deque<std::string>& lane) {
  while (!lane.empty()) {
    std::string key = std::move(lane.front());
    lane.pop_front();
    // An entry of a key handed out from the other lane already (or being processed) is stale.
    if (!dirty_.contains(key) || processing_.contains(key)) {
      continue;
    }
    dirty_.erase(key);
    urgent_keys_.erase(key);
    processing_.insert(key);
    --queued_;
    return key;
  }
  return std::nullopt;
}

std::optional<std::string> WorkQueue::Get() {
  absl::MutexLock lock(&mu_);
  if (std::optional<std::string> key = PopLocked(urgent_)) {
    return key;
  }
  return PopLocked(queue_);
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  if (processing_.erase(key) == 0) {
    return;
  }
  if (dirty_.contains(key)) {
    // Already counted against the capacity when it was added.
    (urgent_keys_.contains(key) ? urgent_ : queue_).push_back(key);
    ++queued_;
  }
}

bool WorkQueue::TakeOverflow() {
  absl::MutexLock lock(&mu_);
  if (!overflowed_ || queued_ > 0) {
    return false;
  }
  overflowed_ = false;
  return true;
}

bool WorkQueue::ReadyLocked() const { return queued_ > 0 || overflowed_ || shutting_down_; }

void WorkQueue::Wait(std::chrono::nanoseconds timeout) const {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(this, &WorkQueue::ReadyLocked), absl::FromChrono(timeout));
}

void WorkQueue::ShutDown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
}

bool WorkQueue::ShuttingDown() const {
  absl::MutexLock lock(&mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  absl::MutexLock lock(&mu_);
  return dirty_.size();
}

}  // namespace mmi::kube

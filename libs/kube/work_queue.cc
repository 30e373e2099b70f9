#include "libs/kube/work_queue.h"

#include <algorithm>
#include <utility>

#include "absl/time/time.h"

namespace mmi::kube {

WorkQueue::WorkQueue(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

WorkQueue::AddResult WorkQueue::Add(const std::string& key) {
  absl::MutexLock lock(&mu_);
  if (dirty_.contains(key)) {
    return AddResult::kAlreadyQueued;
  }
  if (dirty_.size() >= capacity_) {
    const bool first = !overflowed_;
    overflowed_ = true;
    return first ? AddResult::kOverflowed : AddResult::kDropped;
  }
  dirty_.insert(key);
  if (!processing_.contains(key)) {
    queue_.push_back(key);
  }
  return AddResult::kAdded;
}

std::optional<std::string> WorkQueue::Get() {
  absl::MutexLock lock(&mu_);
  if (queue_.empty()) {
    return std::nullopt;
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  if (processing_.erase(key) == 0) {
    return;
  }
  if (dirty_.contains(key)) {
    queue_.push_back(key);  // already counted against the capacity when it was added
  }
}

bool WorkQueue::TakeOverflow() {
  absl::MutexLock lock(&mu_);
  if (!overflowed_ || !queue_.empty()) {
    return false;
  }
  overflowed_ = false;
  return true;
}

bool WorkQueue::ReadyLocked() const { return !queue_.empty() || overflowed_ || shutting_down_; }

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

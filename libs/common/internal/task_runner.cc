#include "libs/common/internal/task_runner.h"

#include <pthread.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/time/time.h"

namespace mmi::internal {

TaskRunner::TaskRunner(const Clock& clock, std::string name, int threads,
                       bool run_on_caller_after_stop)
    : clock_(clock),
      name_(std::move(name)),
      threads_(std::max(threads, 1)),
      run_on_caller_after_stop_(run_on_caller_after_stop) {}

TaskRunner::~TaskRunner() { Stop(); }

void TaskRunner::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) {
    return;
  }
  started_ = true;
  for (int i = 0; i < threads_; ++i) {
    threads_started_.emplace_back([this] { Run(); });
    // Linux limits thread names to 15 characters.
    pthread_setname_np(threads_started_.back().native_handle(), name_.substr(0, 15).c_str());
    thread_ids_.push_back(threads_started_.back().get_id());
  }
}

void TaskRunner::Stop() {
  bool was_started = false;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    was_started = started_;
    wake_.SignalAll();
  }
  for (auto& thread : threads_started_) {
    if (thread.joinable()) {
      thread.join();
    }
  }
  std::deque<Task> left;
  std::multimap<std::chrono::steady_clock::time_point, Task> timers;
  {
    absl::MutexLock lock(&mu_);
    left.swap(queue_);
    timers.swap(timers_);
    stopped_ = true;
  }
  // Destroyed (or run) without the lock: a task's destructor may post.
  timers.clear();
  if (run_on_caller_after_stop_ && !was_started) {
    for (Task& task : left) {
      std::move(task)();
    }
  }
}

bool TaskRunner::AcceptsLocked() const {
  return run_on_caller_after_stop_ ? !stopping_ : !stopped_;
}

void TaskRunner::Post(Task task) {
  {
    absl::MutexLock lock(&mu_);
    if (AcceptsLocked()) {
      queue_.push_back(std::move(task));
      wake_.Signal();
      return;
    }
  }
  if (run_on_caller_after_stop_) {
    std::move(task)();
  }
  // Otherwise dropped: destroyed on return, without the lock.
}

void TaskRunner::PostAfter(std::chrono::nanoseconds delay, Task task) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || stopped_) {
    return;  // never run early; destroyed after the lock is released (parameters outlive it)
  }
  const auto due = clock_.MonotonicNow() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
  timers_.emplace(due, std::move(task));
  wake_.Signal();
}

bool TaskRunner::IsOwnThread() const {
  const auto me = std::this_thread::get_id();
  absl::MutexLock lock(&mu_);
  return me == manual_thread_ ||
         std::find(thread_ids_.begin(), thread_ids_.end(), me) != thread_ids_.end();
}

size_t TaskRunner::Pending() const {
  absl::MutexLock lock(&mu_);
  return queue_.size() + timers_.size();
}

void TaskRunner::PromoteDueTimersLocked() {
  const auto now = clock_.MonotonicNow();
  while (!timers_.empty() && timers_.begin()->first <= now) {
    queue_.push_back(std::move(timers_.begin()->second));
    timers_.erase(timers_.begin());
  }
}

int TaskRunner::RunUntilIdleForTest() { return RunManually(std::numeric_limits<size_t>::max()); }

int TaskRunner::RunQueued() {
  size_t queued = 0;
  {
    absl::MutexLock lock(&mu_);
    PromoteDueTimersLocked();
    queued = queue_.size();
  }
  return RunManually(queued);
}

int TaskRunner::RunManually(size_t limit) {
  {
    absl::MutexLock lock(&mu_);
    manual_thread_ = std::this_thread::get_id();
  }
  int ran = 0;
  while (static_cast<size_t>(ran) < limit) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      PromoteDueTimersLocked();
      if (queue_.empty()) {
        break;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::move(task)();
    ++ran;
  }
  absl::MutexLock lock(&mu_);
  manual_thread_ = std::thread::id();
  return ran;
}

void TaskRunner::Run() {
  mu_.Lock();
  while (true) {
    PromoteDueTimersLocked();
    if (!queue_.empty()) {
      {
        Task task = std::move(queue_.front());
        queue_.pop_front();
        mu_.Unlock();
        std::move(task)();
      }  // the task is destroyed before the lock is taken again
      mu_.Lock();
      continue;
    }
    if (stopping_) {
      break;
    }
    if (timers_.empty()) {
      wake_.Wait(&mu_);
    } else {
      // With RealClock, monotonic time is steady_clock.
      const auto wait = timers_.begin()->first - clock_.MonotonicNow();
      wake_.WaitWithTimeout(
          &mu_, absl::FromChrono(std::max(wait, std::chrono::steady_clock::duration::zero())));
    }
  }
  mu_.Unlock();
}

}  // namespace mmi::internal

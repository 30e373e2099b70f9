#include "services/dispatcher/internal/executor.h"

#include <algorithm>
#include <utility>

namespace mmi::dispatcher::internal {

Executor::Executor(const Clock& clock, std::string name, int threads)
    : clock_(clock), name_(std::move(name)), threads_(threads) {}

Executor::~Executor() { Stop(); }

void Executor::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopping_) {
    return;
  }
  started_ = true;
  for (int i = 0; i < threads_; ++i) {
    workers_.emplace_back([this] { Run(); });
    thread_ids_.push_back(workers_.back().get_id());
  }
}

void Executor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) {
    if (t.joinable()) {
      t.join();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  timers_.clear();
  queue_.clear();
  stopped_ = true;
}

void Executor::Post(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) {
      return;
    }
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void Executor::PostAfter(std::chrono::nanoseconds delay, Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || stopped_) {
      return;
    }
    const auto due = clock_.MonotonicNow() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
    timers_.emplace(due, std::move(task));
  }
  cv_.notify_one();
}

bool Executor::IsCurrentThread() const {
  const auto me = std::this_thread::get_id();
  std::lock_guard<std::mutex> lock(mu_);
  if (manual_running_ && manual_thread_ == me) {
    return true;
  }
  return std::find(thread_ids_.begin(), thread_ids_.end(), me) != thread_ids_.end();
}

size_t Executor::Pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + timers_.size();
}

void Executor::PromoteDueTimersLocked() {
  const auto now = clock_.MonotonicNow();
  while (!timers_.empty() && timers_.begin()->first <= now) {
    queue_.push_back(std::move(timers_.begin()->second));
    timers_.erase(timers_.begin());
  }
}

int Executor::RunUntilIdleForTest() {
  int ran = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    manual_running_ = true;
    manual_thread_ = std::this_thread::get_id();
  }
  while (true) {
    Task task;
    {
      std::lock_guard<std::mutex> lock(mu_);
      PromoteDueTimersLocked();
      if (queue_.empty()) {
        manual_running_ = false;
        return ran;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::move(task)();
    ++ran;
  }
}

void Executor::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    PromoteDueTimersLocked();
    if (!queue_.empty()) {
      Task task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::move(task)();
      lock.lock();
      continue;
    }
    if (stopping_) {
      return;
    }
    if (timers_.empty()) {
      cv_.wait(lock);
    } else {
      // Monotonic time of the injected clock is steady_clock for RealClock.
      const auto wait = timers_.begin()->first - clock_.MonotonicNow();
      cv_.wait_for(lock, std::max(wait, std::chrono::steady_clock::duration::zero()));
    }
  }
}

}  // namespace mmi::dispatcher::internal

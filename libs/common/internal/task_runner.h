// The machinery and the shared surface of mmi::Loop and mmi::WorkerPool (libs/common/loop.h,
// which documents the behaviour): a task queue and a timer queue drained by N threads, or by a
// test's thread. Use Loop or WorkerPool, not this class.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/common/executor.h"

namespace mmi::internal {

class TaskRunner : public Executor {
 public:
  ~TaskRunner() override;  // Stop()
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  // Starts the threads. Once; no-op after Stop().
  void Start();
  // Drains and joins (see loop.h). Idempotent; never from one of its own tasks.
  void Stop();

  void Post(Task task) override;
  // Runs `task` once `delay` has passed on the clock's monotonic time.
  void PostAfter(std::chrono::nanoseconds delay, Task task);

  // Queued tasks plus pending timers.
  size_t Pending() const;
  // Not started: runs queued tasks and timers due now on the calling thread, and those they
  // post, until there are none. Returns how many ran.
  int RunUntilIdleForTest();

 protected:
  // `threads` >= 1 (less counts as 1). `run_on_caller_after_stop`: AfterStop::kRunOnCaller.
  TaskRunner(const Clock& clock, std::string name, int threads, bool run_on_caller_after_stop);

  // On one of its threads, or inside RunUntilIdleForTest() / RunQueued().
  bool IsOwnThread() const;
  // As RunUntilIdleForTest(), but only the tasks queued (or due) when called.
  int RunQueued();

 private:
  void Run();
  // Moves due timers into the queue.
  void PromoteDueTimersLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Post() queues the task (else it drops it or runs it on the caller).
  bool AcceptsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs up to `limit` tasks on the calling thread (not started).
  int RunManually(size_t limit);

  const Clock& clock_;
  const std::string name_;
  const int threads_;
  const bool run_on_caller_after_stop_;

  mutable absl::Mutex mu_;
  absl::CondVar wake_;
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  std::multimap<std::chrono::steady_clock::time_point, Task> timers_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread::id> thread_ids_ ABSL_GUARDED_BY(mu_);
  // The thread inside RunUntilIdleForTest() / RunQueued(), while it is there.
  std::thread::id manual_thread_ ABSL_GUARDED_BY(mu_);
  // Written by Start() and read by Stop(): the owner's calls, never concurrent.
  std::vector<std::thread> threads_started_;
};

}  // namespace mmi::internal

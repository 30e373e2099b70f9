// Executor: a queue of tasks run by N named threads, plus timers. The dispatcher uses one with a
// single thread as its reconcile loop (the only thread that touches dispatch state) and one with
// a few threads as the worker pool for blocking calls (PostgreSQL, hub writes).
//
// With `threads == 0` nothing runs by itself: tests call RunUntilIdleForTest() on their own
// thread and drive timers with a FakeClock, so unit tests need no sleeps.
//
// Thread-safe. Tasks posted after Stop() are dropped. Timers compare against
// clock.MonotonicNow(); with threads they wait in real time, so give threaded executors a real
// clock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "libs/common/clock.h"

namespace mmi::dispatcher::internal {

using Task = absl::AnyInvocable<void() &&>;

class Executor {
 public:
  // `clock` must outlive the executor. `name` shows in logs.
  Executor(const Clock& clock, std::string name, int threads);
  ~Executor();  // Stop()
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Starts the threads (no-op for threads == 0). Call once.
  void Start();
  // Runs what is already queued (not timers that are not due), then joins the threads.
  // Idempotent. Not from one of this executor's threads.
  void Stop();

  void Post(Task task);
  // Runs `task` once `delay` has passed on the clock's monotonic time.
  void PostAfter(std::chrono::nanoseconds delay, Task task);

  // True on one of this executor's threads (or, in manual mode, inside RunUntilIdleForTest).
  bool IsCurrentThread() const;
  // Queued tasks plus pending timers.
  size_t Pending() const;

  // Manual mode: runs queued tasks and timers due now until there are none. Returns how many ran.
  int RunUntilIdleForTest();

 private:
  void Run();
  // Moves due timers into the queue. Requires mu_.
  void PromoteDueTimersLocked();

  const Clock& clock_;
  const std::string name_;
  const int threads_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;                                             // guarded by mu_
  std::multimap<std::chrono::steady_clock::time_point, Task> timers_;  // guarded by mu_
  bool stopping_ = false;                                              // guarded by mu_
  bool started_ = false;                                               // guarded by mu_
  bool stopped_ = false;                                               // guarded by mu_
  std::vector<std::thread::id> thread_ids_;                            // guarded by mu_
  std::vector<std::thread> workers_;
  bool manual_running_ = false;  // guarded by mu_
  std::thread::id manual_thread_;
};

}  // namespace mmi::dispatcher::internal

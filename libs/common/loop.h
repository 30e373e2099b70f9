// Where posted work runs (STYLE.md §5): a Loop is one thread that owns some state and runs the
// tasks posted to it in order; a WorkerPool is a few threads for blocking calls (PostgreSQL, hub
// writes) sharing one queue. Both have a timer queue read from an injected Clock, in the shape
// of Envoy's Event::Dispatcher (post(), isThreadSafe(), timers), and both are an Executor.
//
//   mmi::Loop loop(clock, "dispatch-loop");
//   loop.Start();
//   loop.Post([this] { Reconcile(); });                   // from any thread
//   loop.PostAfter(std::chrono::seconds(1), [this] { Retry(); });
//
// Both offer (internal/task_runner.h): Start(), Stop(), Post(task), PostAfter(delay, task),
// Pending() (queued tasks plus timers) and RunUntilIdleForTest(). Tests do not Start() them:
// tasks wait until the test calls RunUntilIdleForTest() on its own thread, and timers fire once
// a FakeClock has been advanced past them, so no test sleeps.
//
// Stop(), and what happens to work that comes late, is a choice made at construction
// (AfterStop):
//   * Stop() on a started Loop or WorkerPool runs every task already queued (and those they post
//     meanwhile), then joins the threads. Timers not yet due are destroyed unrun, and so is a
//     PostAfter() once Stop() was called: delayed work never runs early.
//   * AfterStop::kDrop: Post() once Stop() returned destroys the task unrun. Stop() on a loop
//     that was never started (a test's) destroys what is queued unrun.
//   * AfterStop::kRunOnCaller: from the moment Stop() is called, Post() runs the task at once on
//     the posting thread, so no task is ever lost (it may then run concurrently with the tasks
//     Stop() is draining). Stop() on a loop that was never started runs what is queued on the
//     caller of Stop().
// Thread-safe, except that Start() and Stop() are called by the owner only (Stop() never from a
// task of its own). Threaded loops wait for timers in real time: give them a real clock.
#pragma once

#include <string>
#include <utility>

#include "libs/common/clock.h"
#include "libs/common/executor.h"
#include "libs/common/internal/task_runner.h"

namespace mmi {

// What Post() does with a task once Stop() has been called (see the top of this file).
enum class AfterStop {
  // Dropped once Stop() returned. For loops whose tasks touch state that is gone after Stop()
  // (the dispatcher's reconcile loop and worker pool, the status sink's loop).
  kDrop,
  // Run at once on the posting thread. For work that must never be lost: callbacks that carry
  // acknowledgements (transports, the status sink's write and store pools).
  kRunOnCaller,
};

// One named thread running posted tasks in post order; timers in due order (equal due times in
// the order they were set). Tasks run one at a time, so state touched only by them needs no lock.
class Loop final : public internal::TaskRunner {
 public:
  // `clock` must outlive the loop. `name` names the thread (first 15 characters).
  Loop(const Clock& clock, std::string name, AfterStop after_stop = AfterStop::kDrop)
      : TaskRunner(clock, std::move(name), 1, after_stop == AfterStop::kRunOnCaller) {}

  // True on the loop thread (or, for a loop not started, inside RunUntilIdleForTest()).
  bool IsLoopThread() const { return IsOwnThread(); }
  // As RunUntilIdleForTest(), but only the tasks queued (or due) when called, not those they
  // post: a test interleaves its own steps between such rounds.
  int RunQueuedForTest() { return RunQueued(); }
};

// `threads` named threads sharing one FIFO queue and timer queue; tasks run concurrently, in no
// particular order. Bounded by its callers (they cap the work they have in flight).
class WorkerPool final : public internal::TaskRunner {
 public:
  // `clock` must outlive the pool. `name` names the threads; `threads` >= 1 (less counts as 1).
  WorkerPool(const Clock& clock, std::string name, int threads,
             AfterStop after_stop = AfterStop::kDrop)
      : TaskRunner(clock, std::move(name), threads, after_stop == AfterStop::kRunOnCaller) {}

  // True on one of the pool's threads (or inside RunUntilIdleForTest()).
  bool IsWorkerThread() const { return IsOwnThread(); }
};

}  // namespace mmi

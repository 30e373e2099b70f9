// The loop on which transports run publish callbacks, so that a callback never runs inside
// Publish() and never on a thread the caller owns: an mmi::Loop (libs/common/loop.h) on real
// time, started at construction, with AfterStop::kRunOnCaller so that no callback (and the
// acknowledgement it carries) is ever lost.
#pragma once

#include <string>
#include <utility>

#include "libs/common/clock.h"
#include "libs/common/loop.h"

namespace mmi::transport::internal {

// Thread-safe.
class SerialExecutor {
 public:
  explicit SerialExecutor(std::string name)
      : loop_(RealClock::Instance(), std::move(name), AfterStop::kRunOnCaller) {
    loop_.Start();
  }

  // Runs `task` on the loop thread after every task posted before it. Once Stop() was called
  // the task runs on the calling thread instead.
  void Post(Task task) { loop_.Post(std::move(task)); }

  // Runs every queued task, then joins the thread. Idempotent; must not be called from a task.
  void Stop() { loop_.Stop(); }

 private:
  Loop loop_;
};

// The first step of a publisher's idempotent Stop(), called under its lifecycle lock with its
// `started` / `stopped` flags. Returns true when Stop() must go on to settle in-flight events;
// false when it was stopped already, or never started (then nothing can be in flight, and
// `callbacks` is stopped here).
inline bool BeginPublisherStop(bool& started, bool& stopped, SerialExecutor& callbacks) {
  if (stopped) {
    return false;
  }
  stopped = true;
  if (!started) {
    callbacks.Stop();
    return false;
  }
  return true;
}

}  // namespace mmi::transport::internal

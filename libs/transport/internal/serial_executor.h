// A single named thread running posted tasks in order. Transports use it so that publish
// callbacks never run inside Publish() and never on a thread the caller owns.
#pragma once

#include <deque>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace mmi::transport::internal {

// Thread-safe.
class SerialExecutor {
 public:
  explicit SerialExecutor(std::string name);
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  // Runs `task` on the executor thread after every task posted before it. After Stop() the
  // task runs on the calling thread instead, so that no task is ever lost.
  void Post(absl::AnyInvocable<void() &&> task);

  // Runs every queued task, then joins the thread. Idempotent; must not be called from a task.
  void Stop();

 private:
  void Run();

  const std::string name_;
  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace mmi::transport::internal

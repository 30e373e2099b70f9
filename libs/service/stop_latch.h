// Where a service's main thread waits for its end: a stop request (SIGTERM) or a fatal event
// such as lost leadership, each with the process exit code it calls for.
#pragma once

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace mmi::service {

// Thread-safe. Once requested it stays requested.
class StopLatch {
 public:
  // Wakes every waiter. The exit code is the highest one requested (a lost Lease, 1, is not
  // hidden by a later SIGTERM, 0).
  void Request(int exit_code);
  // Blocks until Request(); returns the exit code.
  int Wait();
  // Blocks up to `timeout`; true when requested (for retry loops that must end promptly).
  bool WaitFor(std::chrono::milliseconds timeout);
  bool requested() const;
  // The highest exit code requested so far (0 before any request).
  int exit_code() const;

 private:
  mutable absl::Mutex mu_;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;
  int exit_code_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mmi::service
